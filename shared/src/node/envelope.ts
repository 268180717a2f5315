/**
 * Envelope v1 seal / verify / open on native node:crypto — the daemon's and relay's
 * implementation. Same API and byte-identical output as `../envelope/envelope.ts` (@noble,
 * for the browser); the format itself lives in `../envelope/format.ts`.
 */
import { hkdfSync } from 'node:crypto';
import { EnvelopeError } from '../envelope/errors.js';
import { type EnvelopeApi, envelopeInfoJson } from '../envelope/format.js';
import { IDENTITY_HKDF_SALT, type IdentityKeys, identityHkdfInfo } from '../envelope/keys.js';
import { createEnvelopeApi } from '../envelope/orchestrate.js';
import { ed25519PublicFromPrivate, ed25519Sign, ed25519Verify } from './ed25519.js';
import { nativeHpke, x25519PublicFromPrivate } from './hpke.js';
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

/** The native build: seal, verify and open on node:crypto primitives. */
export const nativeEnvelope: EnvelopeApi = createEnvelopeApi({
  sealBase: (pkR, infoBytes, aad, pt, skE) => nativeHpke.sealBaseWith(pkR, infoBytes, aad, pt, skE, true),
  openBase: (enc, skR, infoBytes, aad, ct) => nativeHpke.openBaseWith(enc, skR, infoBytes, aad, ct, true),
  sign: ed25519Sign,
  verify: ed25519Verify,
  info,
  bytes,
  toBase64url: b64u,
  fromBase64url: unb64u,
});

export const { sealEnvelope, verifyEnvelope, openEnvelope } = nativeEnvelope;

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
