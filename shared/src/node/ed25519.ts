/**
 * Native Ed25519 (node:crypto / OpenSSL, strict RFC 8032) over raw 32-byte keys — for
 * envelopes, enrollment proofs and challenge sign-in. Same API as the @noble helpers
 * in `../envelope/keys.ts`.
 */
import { sign, verify } from 'node:crypto';
import type { KeyPair } from '../envelope/hpke-suite.js';
import { asBuffer, cachedPrivateKey, cachedPublicKey, generatePrivateKey, rawPair, view } from './key-objects.js';

export function ed25519Generate(): KeyPair {
  return rawPair(generatePrivateKey('ed25519'));
}

export function ed25519PublicFromPrivate(privateSeed32: Uint8Array): Uint8Array {
  return cachedPrivateKey('ed25519', privateSeed32).publicRaw;
}

/** Signs `data` with the 32-byte private seed; returns the 64-byte signature. */
export function ed25519Sign(privateSeed32: Uint8Array, data: Uint8Array): Uint8Array {
  return view(sign(null, data, cachedPrivateKey('ed25519', privateSeed32).key));
}

/** Never throws: a malformed key or signature is simply `false`. */
export function ed25519Verify(public32: Uint8Array, data: Uint8Array, sig: Uint8Array): boolean {
  if (public32?.length !== 32 || sig?.length !== 64) return false;
  try {
    return verify(null, data, cachedPublicKey('ed25519', public32), asBuffer(sig));
  } catch {
    return false;
  }
}
