/**
 * Envelope v1 seal / verify / open on native node:crypto — the daemon's and relay's
 * implementation. Same API and byte-identical output as `../envelope/envelope.ts` (@noble,
 * for the browser); the format itself lives in `../envelope/format.ts`.
 */
import { hkdfSync } from 'node:crypto';
import { EnvelopeError } from '../envelope/errors.js';
import {
  checkEnvelopeBindings,
  type Envelope,
  type EnvelopeApi,
  envelopeInfoJson,
  headerCanonicalJson,
  type OpenEnvelopeOptions,
  parseEnvelope,
  parseEnvelopeHeader,
  type SealEnvelopeInput,
  signatureInputJson,
} from '../envelope/format.js';
import { IDENTITY_HKDF_SALT, type IdentityKeys, identityHkdfInfo } from '../envelope/keys.js';
import { ed25519PublicFromPrivate, ed25519Sign, ed25519Verify } from './ed25519.js';
import { openBase, sealBase, x25519PublicFromPrivate } from './hpke.js';
import { asBuffer } from './key-objects.js';

const b64u = (bytes: Uint8Array): string => asBuffer(bytes).toString('base64url');
// parseEnvelope has already checked that the text is canonical base64url of the right length.
const unb64u = (text: string): Buffer => Buffer.from(text, 'base64url');
// Header JSON and signature input are ASCII by construction (every header field's pattern
// and base64url are ASCII), so latin1 gives the UTF-8 bytes with a plain copy.
const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');

// deployment -> tenant -> info bytes. The same Buffer instance comes back every time,
// which lets the HPKE layer find its cached key_schedule_context by identity.
const infoCache = new Map<string, Map<string, Buffer>>();
function info(deploymentId: string, tenantId: string): Buffer {
  let byTenant = infoCache.get(deploymentId);
  if (!byTenant) {
    if (infoCache.size >= 16) infoCache.clear();
    byTenant = new Map();
    infoCache.set(deploymentId, byTenant);
  }
  let v = byTenant.get(tenantId);
  if (!v) {
    if (byTenant.size >= 64) byTenant.clear();
    v = Buffer.from(envelopeInfoJson(deploymentId, tenantId), 'utf8');
    byTenant.set(tenantId, v);
  }
  return v;
}

/** Encrypts `plaintext` to the recipient and signs the result; returns the envelope. */
export function sealEnvelope(input: SealEnvelopeInput): Envelope {
  const header = parseEnvelopeHeader(input.header);
  if (!(input.plaintext instanceof Uint8Array)) throw new TypeError('plaintext must be a Uint8Array');
  const headerJson = headerCanonicalJson(header);
  const sealed = sealBase(
    input.recipientX25519Public,
    info(header.deployment_id, header.tenant_id),
    bytes(headerJson),
    input.plaintext,
    input.ephemeralPrivate,
    true,
  );
  const enc = b64u(sealed.enc);
  const ciphertext = b64u(sealed.ciphertext);
  const signature = ed25519Sign(input.senderEd25519Private, bytes(signatureInputJson(headerJson, enc, ciphertext)));
  return { header, enc, ciphertext, signature: b64u(signature) };
}

function verifyParsed(envelope: Envelope, headerJson: string, senderEd25519Public: Uint8Array): boolean {
  return ed25519Verify(
    senderEd25519Public,
    bytes(signatureInputJson(headerJson, envelope.enc, envelope.ciphertext)),
    unb64u(envelope.signature),
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
  if (!(recipientX25519Private instanceof Uint8Array) || recipientX25519Private.length !== 32) {
    throw new EnvelopeError('envelope_invalid_key', 'recipient X25519 private key must be 32 bytes');
  }
  const headerJson = headerCanonicalJson(parsed.header);
  if (options.senderEd25519Public !== undefined && !verifyParsed(parsed, headerJson, options.senderEd25519Public)) {
    throw new EnvelopeError('envelope_bad_signature');
  }
  try {
    return openBase(
      unb64u(parsed.enc),
      recipientX25519Private,
      info(parsed.header.deployment_id, parsed.header.tenant_id),
      bytes(headerJson),
      unb64u(parsed.ciphertext),
      true,
    );
  } catch (cause) {
    throw new EnvelopeError('envelope_decrypt_failed', undefined, { cause });
  }
}

/** The identity's keys from its vaulted seed (see `../envelope/keys.ts`), natively. */
export function deriveIdentityKeys(seed: Uint8Array, rotation: number): IdentityKeys {
  if (!(seed instanceof Uint8Array) || seed.length !== 32) {
    throw new EnvelopeError('envelope_invalid_key', 'identity seed must be 32 bytes');
  }
  const encPrivate = new Uint8Array(hkdfSync('sha256', seed, IDENTITY_HKDF_SALT, identityHkdfInfo(rotation), 32));
  return {
    signPrivate: Uint8Array.from(seed),
    signPublic: ed25519PublicFromPrivate(seed),
    encPrivate,
    encPublic: x25519PublicFromPrivate(encPrivate),
  };
}

export const nativeEnvelope: EnvelopeApi = { sealEnvelope, verifyEnvelope, openEnvelope };
