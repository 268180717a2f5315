/**
 * The one policy on which Ed25519 and X25519 public keys and Ed25519 signatures svc
 * accepts, shared by the node:crypto verifier (`../node/ed25519.ts`) and the @noble one
 * (`./keys.ts`) and by the relay's key checks, so every place accepts the same set.
 * Browser-safe (no node:*).
 *
 * Why: OpenSSL verifies the cofactorless equation and accepts any decodable key, so the
 * identity key with R = identity and S = 0 "signs" every message; @noble refuses
 * small-order keys but checks the cofactored equation, so it accepts signatures whose R
 * carries a torsion component that OpenSSL refuses. Honest keys and signatures never
 * fall outside the set below, so refusing the rest costs nothing.
 *
 * Accepted Ed25519 public key: the canonical encoding (y < p, no "negative zero" x) of
 * a point of the prime-order subgroup other than the identity; this refuses every
 * small-order and every mixed-order key.
 * Accepted signature: S < L and [S]B = R + [k]A exactly (cofactorless, R compared as
 * bytes, so a non-canonical R never matches), as RFC 8032 §5.1.7 permits.
 * Accepted X25519 public key: canonical (high bit clear, u < p) and not one of the
 * small-order points, whose agreement gives a predictable (all-zero) shared secret.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { equalBytes } from '@noble/curves/utils.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { concatBytes } from '@noble/hashes/utils.js';

const Point = ed25519.Point;
/** Order of the prime-order subgroup (L in RFC 8032). */
const L = Point.Fn.ORDER;
const P = 2n ** 255n - 19n;

export function bytesToBigintLE(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i] as number);
  return n;
}

/** A checked key is remembered (bounded): peers' signing keys are few and long-lived. */
const CHECKED_MAX = 1024;
const checkedEd25519 = new Map<string, string | undefined>();

const keyOf = (bytes: Uint8Array): string => String.fromCharCode(...bytes);

/** The point of a canonical encoding (y < p, no negative zero), or undefined. */
function decodeStrict(bytes: Uint8Array): ReturnType<typeof Point.fromBytes> | undefined {
  try {
    return Point.fromBytes(bytes, false);
  } catch {
    return undefined;
  }
}

function ed25519KeyProblemUncached(bytes: Uint8Array): string | undefined {
  const point = decodeStrict(bytes);
  if (point === undefined) return 'not the canonical encoding of a curve point';
  if (point.is0()) return 'the identity point';
  if (!point.isTorsionFree()) return 'a small-order or mixed-order point';
  return undefined;
}

/** Why an Ed25519 public key is refused, or undefined when it is accepted. Never throws. */
export function ed25519PublicKeyProblem(bytes: Uint8Array): string | undefined {
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) return 'not 32 bytes';
  const k = keyOf(bytes);
  if (checkedEd25519.has(k)) return checkedEd25519.get(k);
  const problem = ed25519KeyProblemUncached(bytes);
  if (checkedEd25519.size >= CHECKED_MAX) checkedEd25519.delete(checkedEd25519.keys().next().value as string);
  checkedEd25519.set(k, problem);
  return problem;
}

/**
 * Strict Ed25519 verification under the policy above: the key is accepted, S < L, and
 * [S]B - [k]A encodes to exactly the signature's R. Never throws.
 */
export function ed25519VerifyStrict(publicKey: Uint8Array, data: Uint8Array, signature: Uint8Array): boolean {
  if (ed25519PublicKeyProblem(publicKey) !== undefined) return false;
  const s = ed25519SignatureScalar(signature);
  const A = decodeStrict(publicKey);
  if (s === undefined || A === undefined || !(data instanceof Uint8Array)) return false;
  const r = signature.subarray(0, 32);
  const k = bytesToBigintLE(sha512(concatBytes(r, publicKey, data))) % L;
  const expected = Point.BASE.multiplyUnsafe(s).subtract(A.multiplyUnsafe(k)).toBytes();
  return equalBytes(expected, r);
}

/** The signature's S as a scalar when it is canonical (S < L); undefined otherwise. */
export function ed25519SignatureScalar(signature: Uint8Array): bigint | undefined {
  if (!(signature instanceof Uint8Array) || signature.length !== 64) return undefined;
  const s = bytesToBigintLE(signature.subarray(32));
  return s < L ? s : undefined;
}

/**
 * The canonical little-endian u-coordinates of the small-order points of Curve25519 and
 * its twist (orders 1, 2, 4, 8); every other encoding of them is refused as non-canonical.
 */
export const X25519_SMALL_ORDER_U: readonly bigint[] = [
  0n,
  1n,
  325606250916557431795983626356110631294008115727848805560023387167927233504n,
  39382357235489614581723060781553021112529911719440698176882885853963445705823n,
  P - 1n,
];

/** Why an X25519 public key is refused, or undefined when it is accepted. Never throws. */
export function x25519PublicKeyProblem(bytes: Uint8Array): string | undefined {
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) return 'not 32 bytes';
  if (((bytes[31] as number) & 0x80) !== 0) return 'not canonical (high bit set)';
  const u = bytesToBigintLE(bytes);
  if (u >= P) return 'not canonical (u >= p)';
  if (X25519_SMALL_ORDER_U.includes(u)) return 'a small-order point';
  return undefined;
}
