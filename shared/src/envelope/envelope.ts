/**
 * Envelope v1 seal / verify / open on @noble/* (browser-safe; the dashboard page uses
 * it). `../node/envelope.ts` is the node:crypto twin with the same API and bytes.
 */
import { fromBase64url, toBase64url, utf8 } from '../base64url.js';
import { EnvelopeError } from './errors.js';
import {
  checkEnvelopeBindings,
  type Envelope,
  type EnvelopeApi,
  envelopeInfo,
  headerCanonicalJson,
  type OpenEnvelopeOptions,
  parseEnvelope,
  parseEnvelopeHeader,
  type SealEnvelopeInput,
  signatureInputJson,
} from './format.js';
import { hpkeOpenBase, hpkeSealBase } from './hpke.js';
import { checkKey, ED25519_SEED_LENGTH, ed25519Sign, ed25519Verify, X25519_KEY_LENGTH } from './keys.js';

/** Encrypts `plaintext` to the recipient and signs the result; returns the envelope. */
export function sealEnvelope(input: SealEnvelopeInput): Envelope {
  const header = parseEnvelopeHeader(input.header);
  checkKey(input.recipientX25519Public, X25519_KEY_LENGTH, 'recipient X25519 public key');
  checkKey(input.senderEd25519Private, ED25519_SEED_LENGTH, 'sender Ed25519 private key');
  if (!(input.plaintext instanceof Uint8Array)) throw new TypeError('plaintext must be a Uint8Array');
  const headerJson = headerCanonicalJson(header);
  const sealed = hpkeSealBase(
    input.recipientX25519Public,
    envelopeInfo(header.deployment_id, header.tenant_id),
    utf8(headerJson),
    input.plaintext,
    input.ephemeralPrivate,
  );
  const enc = toBase64url(sealed.enc);
  const ciphertext = toBase64url(sealed.ciphertext);
  const signature = ed25519Sign(input.senderEd25519Private, utf8(signatureInputJson(headerJson, enc, ciphertext)));
  return { header, enc, ciphertext, signature: toBase64url(signature) };
}

function verifyParsed(envelope: Envelope, headerJson: string, senderEd25519Public: Uint8Array): boolean {
  return ed25519Verify(
    senderEd25519Public,
    utf8(signatureInputJson(headerJson, envelope.enc, envelope.ciphertext)),
    fromBase64url(envelope.signature),
  );
}

/** True only if the envelope is well-formed and its signature verifies; never throws. */
export function verifyEnvelope(envelope: Envelope, senderEd25519Public: Uint8Array): boolean {
  let parsed: Envelope;
  try {
    parsed = parseEnvelope(envelope);
  } catch {
    return false;
  }
  return verifyParsed(parsed, headerCanonicalJson(parsed.header), senderEd25519Public);
}

/**
 * Checks the envelope's shape and bindings (and its signature when
 * `options.senderEd25519Public` is given), then decrypts. Throws `EnvelopeError`:
 * `envelope_malformed`, `envelope_unsupported_version`, `envelope_wrong_recipient`,
 * `envelope_binding_mismatch`, `envelope_bad_signature`, `envelope_invalid_key`,
 * `envelope_decrypt_failed`.
 */
export function openEnvelope(
  envelope: Envelope,
  recipientX25519Private: Uint8Array,
  options: OpenEnvelopeOptions,
): Uint8Array {
  const parsed = parseEnvelope(envelope);
  checkEnvelopeBindings(parsed.header, options);
  checkKey(recipientX25519Private, X25519_KEY_LENGTH, 'recipient X25519 private key');
  const headerJson = headerCanonicalJson(parsed.header);
  if (options.senderEd25519Public !== undefined && !verifyParsed(parsed, headerJson, options.senderEd25519Public)) {
    throw new EnvelopeError('envelope_bad_signature');
  }
  try {
    return hpkeOpenBase(
      fromBase64url(parsed.enc),
      recipientX25519Private,
      envelopeInfo(parsed.header.deployment_id, parsed.header.tenant_id),
      utf8(headerJson),
      fromBase64url(parsed.ciphertext),
    );
  } catch (cause) {
    throw new EnvelopeError('envelope_decrypt_failed', undefined, { cause });
  }
}

export const nobleEnvelope: EnvelopeApi = { sealEnvelope, verifyEnvelope, openEnvelope };
