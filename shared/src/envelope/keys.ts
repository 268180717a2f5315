/**
 * Key helpers on @noble/* (browser-safe): Ed25519 signing keys, X25519 encryption keys,
 * and the identity derivation of ARCHITECTURE "Identity": the vaulted 32-byte seed *is*
 * the Ed25519 private key; the X25519 key is derived from it with HKDF and a rotation
 * counter, so the encryption key can rotate without replacing the identity.
 */
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8 } from '../base64url.js';
import { canonicalJsonBytes } from '../canonical-json.js';
import { EnvelopeError } from './errors.js';
import type { KeyPair } from './hpke-suite.js';
import { ed25519VerifyStrict } from './key-checks.js';

export const ED25519_SEED_LENGTH = 32;
export const ED25519_PUBLIC_LENGTH = 32;
export const ED25519_SIGNATURE_LENGTH = 64;
export const X25519_KEY_LENGTH = 32;

/** HKDF salt of the X25519 derivation. */
export const IDENTITY_HKDF_SALT = utf8('svc/identity/v1');

/** HKDF info of the X25519 derivation: canonical JSON `{"rotation":N,"svc":"identity/x25519/v1"}`. */
export function identityHkdfInfo(rotation: number): Uint8Array {
  if (!Number.isSafeInteger(rotation) || rotation < 0) {
    throw new RangeError('rotation must be a non-negative integer');
  }
  return canonicalJsonBytes({ svc: 'identity/x25519/v1', rotation });
}

export interface IdentityKeys {
  /** The Ed25519 private key: the 32-byte seed itself. */
  signPrivate: Uint8Array;
  signPublic: Uint8Array;
  /** X25519 private key = HKDF-SHA256(seed, IDENTITY_HKDF_SALT, identityHkdfInfo(rotation), 32). */
  encPrivate: Uint8Array;
  encPublic: Uint8Array;
}

export function checkKey(bytes: Uint8Array, length: number, what: string): void {
  if (!(bytes instanceof Uint8Array) || bytes.length !== length) {
    throw new EnvelopeError('envelope_invalid_key', `${what} must be ${length} bytes`);
  }
}

export function ed25519Generate(): KeyPair {
  const { secretKey, publicKey } = ed25519.keygen();
  return { privateKey: secretKey, publicKey };
}

export function ed25519PublicFromPrivate(seed: Uint8Array): Uint8Array {
  checkKey(seed, ED25519_SEED_LENGTH, 'Ed25519 private key');
  return ed25519.getPublicKey(seed);
}

export function ed25519Sign(seed: Uint8Array, data: Uint8Array): Uint8Array {
  checkKey(seed, ED25519_SEED_LENGTH, 'Ed25519 private key');
  return ed25519.sign(data, seed);
}

/**
 * Strict verification under the shared policy of `./key-checks.ts` (the node:crypto
 * verifier applies the same policy, so both accept exactly the same signatures).
 * Never throws; a malformed key or signature is simply `false`.
 */
export function ed25519Verify(publicKey: Uint8Array, data: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey?.length !== ED25519_PUBLIC_LENGTH || signature?.length !== ED25519_SIGNATURE_LENGTH) return false;
  return ed25519VerifyStrict(publicKey, data, signature);
}

export function x25519Generate(): KeyPair {
  const { secretKey, publicKey } = x25519.keygen();
  return { privateKey: secretKey, publicKey };
}

export function x25519PublicFromPrivate(privateKey: Uint8Array): Uint8Array {
  checkKey(privateKey, X25519_KEY_LENGTH, 'X25519 private key');
  return x25519.getPublicKey(privateKey);
}

export function deriveIdentityKeys(seed: Uint8Array, rotation: number): IdentityKeys {
  checkKey(seed, ED25519_SEED_LENGTH, 'identity seed');
  const encPrivate = hkdf(sha256, seed, IDENTITY_HKDF_SALT, identityHkdfInfo(rotation), X25519_KEY_LENGTH);
  return {
    signPrivate: Uint8Array.from(seed),
    signPublic: ed25519.getPublicKey(seed),
    encPrivate,
    encPublic: x25519.getPublicKey(encPrivate),
  };
}
