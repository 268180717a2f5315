/**
 * Raw 32-byte Ed25519/X25519 keys <-> node:crypto KeyObjects. Node 20 has no 'raw' key
 * import. Public keys go through JWK (`x` is the raw key in base64url): with OpenSSL 3,
 * JWK import/export of a public key is 5-10x faster than the DER (SPKI) decoder/encoder,
 * and the ephemeral key of every envelope takes this path. Private keys too (see
 * `privateKeyFromRaw`), with their fixed PKCS#8 DER prefix (RFC 8410) as the fallback.
 * Parsed KeyObjects are cached (bounded) by key bytes; a process uses few long-lived keys.
 */
import { createPrivateKey, createPublicKey, type KeyObject, randomBytes } from 'node:crypto';
import { EnvelopeError } from '../envelope/errors.js';

export type OkpCurve = 'ed25519' | 'x25519';

const OID: Record<OkpCurve, number> = { ed25519: 0x70, x25519: 0x6e };
const pkcs8Prefix = (curve: OkpCurve) =>
  Buffer.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, OID[curve], 0x04, 0x22, 0x04, 0x20]);

const PKCS8 = { ed25519: pkcs8Prefix('ed25519'), x25519: pkcs8Prefix('x25519') };
const PKCS8_LENGTH = 48;
const JWK_CRV = { ed25519: 'Ed25519', x25519: 'X25519' } as const;

/** A zero-copy Uint8Array view of a Buffer (so callers get plain Uint8Array values). */
export const view = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/** A zero-copy Buffer view of a Uint8Array. */
export const asBuffer = (u: Uint8Array): Buffer =>
  Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);

function checkRaw(bytes: Uint8Array, what: string): void {
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) {
    throw new EnvelopeError('envelope_invalid_key', `${what} must be 32 bytes`);
  }
}

/** Any 32-byte base64url value: Node derives the public key from `d` and does not read `x`. */
const UNREAD_X = 'A'.repeat(43);

/**
 * Private KeyObject from raw bytes. Node 20 imports an OKP JWK with a raw-key call (~90 µs)
 * but a PKCS#8 DER key through OpenSSL 3's decoders (~1.1 ms). A JWK needs `x`, which Node
 * does not read for a private key (the public half is always derived from `d`, here and by
 * every caller); should a later Node refuse it, the DER import still gives the same key.
 */
export function privateKeyFromRaw(curve: OkpCurve, raw: Uint8Array): KeyObject {
  checkRaw(raw, `${curve} private key`);
  const d = asBuffer(raw).toString('base64url');
  try {
    return createPrivateKey({ key: { kty: 'OKP', crv: JWK_CRV[curve], d, x: UNREAD_X }, format: 'jwk' });
  } catch {
    return privateKeyFromDer(curve, raw);
  }
}

function privateKeyFromDer(curve: OkpCurve, raw: Uint8Array): KeyObject {
  const der = Buffer.allocUnsafe(PKCS8_LENGTH);
  PKCS8[curve].copy(der, 0);
  der.set(raw, 16);
  try {
    return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } finally {
    der.fill(0);
  }
}

/**
 * A new private key: 32 random bytes are a valid X25519 private key and a valid Ed25519
 * seed (RFC 7748, RFC 8032), imported like any other. Not `generateKeyPairSync`: on Node
 * 20 its KeyObjects share a lock with the key-generation job, and when the garbage
 * collector frees that job while a JWK export of the key holds the lock, the process
 * deadlocks (seen within seconds of sealing in a loop; see docs/decisions.md).
 */
export function generatePrivateKey(curve: OkpCurve): KeyObject {
  const raw = randomBytes(32);
  try {
    return privateKeyFromRaw(curve, raw);
  } finally {
    raw.fill(0);
  }
}

export function publicKeyFromRaw(curve: OkpCurve, raw: Uint8Array): KeyObject {
  checkRaw(raw, `${curve} public key`);
  return publicKeyFromBase64url(curve, asBuffer(raw).toString('base64url'));
}

/** Public KeyObject from the base64url of a raw key (as an envelope's `enc` already is). */
export function publicKeyFromBase64url(curve: OkpCurve, x: string): KeyObject {
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: JWK_CRV[curve], x }, format: 'jwk' });
  } catch (cause) {
    throw new EnvelopeError('envelope_invalid_key', `${curve} public key is not valid`, { cause });
  }
}

/** The raw public key, base64url (the JWK `x`). */
export function rawPublicBase64url(key: KeyObject): string {
  return key.export({ format: 'jwk' }).x as string;
}

export function rawPublic(key: KeyObject): Uint8Array {
  return view(Buffer.from(rawPublicBase64url(key), 'base64url'));
}

/** Raw private and public key of a private KeyObject (one JWK export gives both). */
export function rawPair(privateKey: KeyObject): { privateKey: Uint8Array; publicKey: Uint8Array } {
  const jwk = privateKey.export({ format: 'jwk' });
  return {
    privateKey: view(Buffer.from(jwk.d as string, 'base64url')),
    publicKey: view(Buffer.from(jwk.x as string, 'base64url')),
  };
}

/** A private key with its raw public key, both derived once. */
export interface PrivateKeyEntry {
  key: KeyObject;
  publicRaw: Uint8Array;
}

class BoundedCache<V> {
  readonly #map = new Map<string, V>();
  constructor(readonly max: number) {}
  get(k: string): V | undefined {
    return this.#map.get(k);
  }
  set(k: string, v: V): void {
    if (this.#map.size >= this.max) {
      const oldest = this.#map.keys().next().value;
      if (oldest !== undefined) this.#map.delete(oldest);
    }
    this.#map.set(k, v);
  }
}

const CACHE_MAX = 256;
const privateCache = {
  ed25519: new BoundedCache<PrivateKeyEntry>(CACHE_MAX),
  x25519: new BoundedCache<PrivateKeyEntry>(CACHE_MAX),
};
const publicCache = { ed25519: new BoundedCache<KeyObject>(CACHE_MAX), x25519: new BoundedCache<KeyObject>(CACHE_MAX) };

const cacheKey = (raw: Uint8Array): string => asBuffer(raw).toString('latin1');

/**
 * In front of the by-value caches: the last lookup per array instance, with a copy of the
 * bytes it had, so a caller that reuses (or mutates) its array is always served correctly.
 */
interface InstanceHit<V> {
  bytes: Uint8Array;
  value: V;
}
type InstanceCache<V> = WeakMap<Uint8Array, InstanceHit<V>>;

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) if (a[i] !== b[i]) return false;
  return true;
}

function lookup<V>(raw: Uint8Array, byInstance: InstanceCache<V>, valueCache: BoundedCache<V>, make: () => V): V {
  const hit = byInstance.get(raw);
  if (hit && sameBytes(hit.bytes, raw)) return hit.value;
  const k = cacheKey(raw);
  let value = valueCache.get(k);
  if (value === undefined) {
    value = make();
    valueCache.set(k, value);
  }
  byInstance.set(raw, { bytes: Uint8Array.from(raw), value });
  return value;
}

const privateByInstance = { ed25519: new WeakMap(), x25519: new WeakMap() } as Record<
  OkpCurve,
  InstanceCache<PrivateKeyEntry>
>;
const publicByInstance = { ed25519: new WeakMap(), x25519: new WeakMap() } as Record<
  OkpCurve,
  InstanceCache<KeyObject>
>;

/** Cached private KeyObject (and raw public key) for a raw private key. */
export function cachedPrivateKey(curve: OkpCurve, raw: Uint8Array): PrivateKeyEntry {
  checkRaw(raw, `${curve} private key`);
  return lookup(raw, privateByInstance[curve], privateCache[curve], () => {
    const key = privateKeyFromRaw(curve, raw);
    return { key, publicRaw: rawPublic(createPublicKey(key)) };
  });
}

/** Cached public KeyObject for a raw public key (peers' long-lived keys, not ephemeral ones). */
export function cachedPublicKey(curve: OkpCurve, raw: Uint8Array): KeyObject {
  checkRaw(raw, `${curve} public key`);
  return lookup(raw, publicByInstance[curve], publicCache[curve], () => publicKeyFromRaw(curve, raw));
}
