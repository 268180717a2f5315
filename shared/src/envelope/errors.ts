/**
 * Envelope failures carry a stable code (a union type), like the error catalog in
 * `../errors.ts`; the daemon maps them once at its edge. Messages say what happened
 * without echoing secret material.
 */
export const ENVELOPE_ERRORS = {
  envelope_malformed: 'The envelope does not match the envelope v1 format.',
  envelope_unsupported_version: 'The envelope uses a version this client does not understand; update svc.',
  envelope_invalid_key: 'A key has the wrong length or is not a valid curve point.',
  envelope_bad_signature: "The envelope's signature does not verify against the sender's signing key.",
  envelope_wrong_recipient: 'The envelope is addressed to another recipient.',
  envelope_binding_mismatch: 'The envelope is bound to another deployment or tenant.',
  envelope_decrypt_failed: 'The envelope could not be decrypted: wrong key, or the envelope was altered.',
  envelope_replayed: 'A message with this id from this sender was already accepted.',
} as const;

export type EnvelopeErrorCode = keyof typeof ENVELOPE_ERRORS;

export class EnvelopeError extends Error {
  readonly code: EnvelopeErrorCode;

  constructor(code: EnvelopeErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? ENVELOPE_ERRORS[code], options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EnvelopeError';
    this.code = code;
  }
}

export function isEnvelopeError(value: unknown, code?: EnvelopeErrorCode): value is EnvelopeError {
  return value instanceof EnvelopeError && (code === undefined || value.code === code);
}
