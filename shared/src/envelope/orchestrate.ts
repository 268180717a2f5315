/**
 * Envelope v1 seal / verify / open, written once over a set of primitives. The @noble
 * build (`./envelope.ts`, browser) and the node:crypto build (`../node/envelope.ts`) supply
 * their own; the steps, checks and bytes are the same for both.
 */
import { EnvelopeError } from './errors.js';
import {
  checkEnvelopeBindings,
  type Envelope,
  type EnvelopeApi,
  headerCanonicalJson,
  type OpenEnvelopeOptions,
  parseEnvelope,
  parseEnvelopeHeader,
  type SealEnvelopeInput,
  signatureInputJson,
} from './format.js';
import { checkKey, ED25519_SEED_LENGTH, X25519_KEY_LENGTH } from './keys.js';

export interface EnvelopePrimitives {
  /** HPKE base-mode single-shot seal of this suite */
  sealBase(
    pkR: Uint8Array,
    info: Uint8Array,
    aad: Uint8Array,
    pt: Uint8Array,
    skE?: Uint8Array,
  ): {
    enc: Uint8Array;
    ciphertext: Uint8Array;
  };
  openBase(enc: Uint8Array, skR: Uint8Array, info: Uint8Array, aad: Uint8Array, ct: Uint8Array): Uint8Array;
  sign(seed: Uint8Array, data: Uint8Array): Uint8Array;
  verify(publicKey: Uint8Array, data: Uint8Array, signature: Uint8Array): boolean;
  /** the HPKE `info` bytes binding deployment and tenant */
  info(deploymentId: string, tenantId: string): Uint8Array;
  /** UTF-8 bytes of an (ASCII) JSON text */
  bytes(text: string): Uint8Array;
  toBase64url(bytes: Uint8Array): string;
  /** decodes text that parseEnvelope has already checked */
  fromBase64url(text: string): Uint8Array;
}

export function createEnvelopeApi(p: EnvelopePrimitives): EnvelopeApi {
  const verifyParsed = (envelope: Envelope, headerJson: string, senderPublic: Uint8Array): boolean =>
    p.verify(
      senderPublic,
      p.bytes(signatureInputJson(headerJson, envelope.enc, envelope.ciphertext)),
      p.fromBase64url(envelope.signature),
    );

  return {
    sealEnvelope(input: SealEnvelopeInput): Envelope {
      const header = parseEnvelopeHeader(input.header);
      checkKey(input.recipientX25519Public, X25519_KEY_LENGTH, 'recipient X25519 public key');
      checkKey(input.senderEd25519Private, ED25519_SEED_LENGTH, 'sender Ed25519 private key');
      if (!(input.plaintext instanceof Uint8Array)) throw new TypeError('plaintext must be a Uint8Array');
      const headerJson = headerCanonicalJson(header);
      const sealed = p.sealBase(
        input.recipientX25519Public,
        p.info(header.deployment_id, header.tenant_id),
        p.bytes(headerJson),
        input.plaintext,
        input.ephemeralPrivate,
      );
      const enc = p.toBase64url(sealed.enc);
      const ciphertext = p.toBase64url(sealed.ciphertext);
      const signature = p.sign(input.senderEd25519Private, p.bytes(signatureInputJson(headerJson, enc, ciphertext)));
      // canonical key order: JSON.stringify of the envelope is its canonical JSON
      return { ciphertext, enc, header, signature: p.toBase64url(signature) };
    },

    /** True only if the envelope is well-formed and its signature verifies; never throws. */
    verifyEnvelope(envelope: Envelope, senderEd25519Public: Uint8Array): boolean {
      let parsed: Envelope;
      try {
        parsed = parseEnvelope(envelope);
      } catch {
        return false;
      }
      return verifyParsed(parsed, headerCanonicalJson(parsed.header), senderEd25519Public);
    },

    /**
     * Checks shape and bindings (and the signature when `options.senderEd25519Public` is
     * given), then decrypts. Throws `EnvelopeError`: envelope_malformed,
     * envelope_unsupported_version, envelope_wrong_recipient, envelope_binding_mismatch,
     * envelope_bad_signature, envelope_invalid_key, envelope_decrypt_failed.
     */
    openEnvelope(envelope: Envelope, recipientX25519Private: Uint8Array, options: OpenEnvelopeOptions): Uint8Array {
      const parsed = parseEnvelope(envelope);
      checkEnvelopeBindings(parsed.header, options);
      checkKey(recipientX25519Private, X25519_KEY_LENGTH, 'recipient X25519 private key');
      const headerJson = headerCanonicalJson(parsed.header);
      if (options.senderEd25519Public !== undefined && !verifyParsed(parsed, headerJson, options.senderEd25519Public)) {
        throw new EnvelopeError('envelope_bad_signature');
      }
      try {
        return p.openBase(
          p.fromBase64url(parsed.enc),
          recipientX25519Private,
          p.info(parsed.header.deployment_id, parsed.header.tenant_id),
          p.bytes(headerJson),
          p.fromBase64url(parsed.ciphertext),
        );
      } catch (cause) {
        throw new EnvelopeError('envelope_decrypt_failed', undefined, { cause });
      }
    },
  };
}
