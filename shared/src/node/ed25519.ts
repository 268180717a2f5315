/**
 * Native Ed25519 (node:crypto / OpenSSL, strict RFC 8032) over raw 32-byte keys — for
 * envelopes, enrollment proofs and challenge sign-in. Same API as the @noble helpers
 * in `../envelope/keys.ts`.
 */
import { sign, verify } from 'node:crypto';
import type { KeyPair } from '../envelope/hpke-suite.js';
import { ed25519PublicKeyProblem, ed25519SignatureScalar } from '../envelope/key-checks.js';
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

/**
 * OpenSSL's check (cofactorless, R compared as bytes) behind the shared policy of
 * `../envelope/key-checks.ts`: it refuses the small-order, mixed-order and non-canonical
 * keys and the S >= L that OpenSSL alone would take, so this verifier and the @noble one
 * accept exactly the same signatures. Never throws: a malformed key or signature is `false`.
 */
export function ed25519Verify(public32: Uint8Array, data: Uint8Array, sig: Uint8Array): boolean {
  if (public32?.length !== 32 || sig?.length !== 64) return false;
  if (ed25519PublicKeyProblem(public32) !== undefined || ed25519SignatureScalar(sig) === undefined) return false;
  try {
    return verify(null, data, cachedPublicKey('ed25519', public32), asBuffer(sig));
  } catch {
    return false;
  }
}
