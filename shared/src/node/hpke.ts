/**
 * RFC 9180 HPKE, base mode, DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305,
 * on native node:crypto. node's hkdf() does Extract and Expand together, so the labeled
 * steps are written with HMAC-SHA256 directly (every output fits one SHA-256 block).
 * Same API and bytes as `../envelope/hpke.ts`.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createPublicKey,
  diffieHellman,
  type KeyObject,
} from 'node:crypto';
import { EnvelopeError } from '../envelope/errors.js';
import {
  EXPAND_COUNTER_1,
  HPKE_MODE_BASE,
  type HpkeApi,
  type HpkeKeySchedule,
  type HpkeSealed,
  type HpkeSenderContext,
  isAllZero,
  type KeyPair,
  LABEL,
  N_ENC,
  N_H,
  N_K,
  N_N,
  N_SECRET,
  N_SK,
  N_T,
  nonceForSequence,
} from '../envelope/hpke-suite.js';
import {
  cachedPrivateKey,
  cachedPublicKey,
  generatePrivateKey,
  privateKeyFromRaw,
  publicKeyFromRaw,
  rawPair,
  rawPublic,
  view,
} from './key-objects.js';

const EMPTY = Buffer.alloc(0);

/** LabeledExtract(salt, label, ikm) = HMAC(salt, "HPKE-v1" || suite_id || label || ikm). */
function labeledExtract(salt: Uint8Array, prefix: Uint8Array, ikm: Uint8Array): Buffer {
  return createHmac('sha256', salt).update(prefix).update(ikm).digest();
}

/** LabeledExpand(prk, label, info, L) for L <= 32: first block of HKDF-Expand, truncated. */
function labeledExpand(prk: Uint8Array, prefix: Uint8Array, info: Uint8Array, length: number): Buffer {
  const t1 = createHmac('sha256', prk).update(prefix).update(info).update(EXPAND_COUNTER_1).digest();
  return length === t1.length ? t1 : t1.subarray(0, length);
}

function dh(privateKey: KeyObject, publicKey: KeyObject): Buffer {
  let out: Buffer;
  try {
    out = diffieHellman({ privateKey, publicKey });
  } catch (cause) {
    throw new EnvelopeError('envelope_invalid_key', 'X25519 refused the key', { cause });
  }
  if (isAllZero(out)) throw new EnvelopeError('envelope_invalid_key', 'X25519 produced the all-zero value');
  return out;
}

function extractAndExpand(dhOut: Uint8Array, enc: Uint8Array, recipientPublic: Uint8Array): Buffer {
  const eaePrk = labeledExtract(EMPTY, LABEL.eaePrk, dhOut);
  const t1 = createHmac('sha256', eaePrk)
    .update(LABEL.sharedSecret)
    .update(enc) // kem_context = enc || pkRm
    .update(recipientPublic)
    .update(EXPAND_COUNTER_1)
    .digest();
  return N_SECRET === t1.length ? t1 : t1.subarray(0, N_SECRET);
}

let pskIdHash: Buffer | undefined;
const contextCache = new Map<string, Buffer>();
const contextByInstance = new WeakMap<Uint8Array, Buffer>();
const CONTEXT_CACHE_MAX = 64;

/**
 * key_schedule_context = mode || psk_id_hash || info_hash; cached per info value. With
 * `stableInfo` (the envelope layer's own cached, never-mutated info Buffers) it is also
 * cached per instance, which skips hashing the info into a cache key.
 */
function keyScheduleContext(info: Uint8Array, stableInfo = false): Buffer {
  let hit = stableInfo ? contextByInstance.get(info) : undefined;
  if (hit) return hit;
  const cacheKey = Buffer.from(info.buffer, info.byteOffset, info.byteLength).toString('latin1');
  hit = contextCache.get(cacheKey);
  if (hit) {
    if (stableInfo) contextByInstance.set(info, hit);
    return hit;
  }
  pskIdHash ??= labeledExtract(EMPTY, LABEL.pskIdHash, EMPTY);
  const ctx = Buffer.concat([Buffer.of(HPKE_MODE_BASE), pskIdHash, labeledExtract(EMPTY, LABEL.infoHash, info)]);
  if (contextCache.size >= CONTEXT_CACHE_MAX) contextCache.clear();
  contextCache.set(cacheKey, ctx);
  if (stableInfo) contextByInstance.set(info, ctx);
  return ctx;
}

interface Keys {
  key: Buffer;
  baseNonce: Buffer;
}

function aeadKeys(
  sharedSecret: Uint8Array,
  info: Uint8Array,
  stableInfo = false,
): Keys & { secret: Buffer; ctx: Buffer } {
  const ctx = keyScheduleContext(info, stableInfo);
  const secret = labeledExtract(sharedSecret, LABEL.secret, EMPTY); // psk = default_psk = ""
  return {
    secret,
    ctx,
    key: labeledExpand(secret, LABEL.key, ctx, N_K),
    baseNonce: labeledExpand(secret, LABEL.baseNonce, ctx, N_N),
  };
}

function keySchedule(sharedSecret: Uint8Array, info: Uint8Array): HpkeKeySchedule {
  const { secret, ctx, key, baseNonce } = aeadKeys(sharedSecret, info);
  return {
    sharedSecret: view(Buffer.from(sharedSecret)),
    key: view(key),
    baseNonce: view(baseNonce),
    exporterSecret: view(labeledExpand(secret, LABEL.exp, ctx, N_H)),
  };
}

function encap(recipientPublic: Uint8Array, ephemeralPrivate?: Uint8Array): { enc: Uint8Array; sharedSecret: Buffer } {
  const pkR = cachedPublicKey('x25519', recipientPublic);
  const skE =
    ephemeralPrivate === undefined ? generatePrivateKey('x25519') : privateKeyFromRaw('x25519', ephemeralPrivate);
  const enc = rawPublic(createPublicKey(skE));
  return { enc, sharedSecret: extractAndExpand(dh(skE, pkR), enc, recipientPublic) };
}

function decap(enc: Uint8Array, recipientPrivate: Uint8Array): Buffer {
  if (!(enc instanceof Uint8Array) || enc.length !== N_ENC)
    throw new EnvelopeError('envelope_invalid_key', 'enc must be 32 bytes');
  const skR = cachedPrivateKey('x25519', recipientPrivate);
  // The ephemeral public key is new every time: parse it, never cache it.
  return extractAndExpand(dh(skR.key, publicKeyFromRaw('x25519', enc)), enc, skR.publicRaw);
}

export function aeadSeal(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  const cipher = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: N_T });
  cipher.setAAD(aad, { plaintextLength: plaintext.length });
  const body = cipher.update(plaintext);
  cipher.final();
  const out = Buffer.allocUnsafe(body.length + N_T);
  body.copy(out, 0);
  cipher.getAuthTag().copy(out, body.length);
  return view(out);
}

export function aeadOpen(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array {
  if (ciphertext.length < N_T) throw new EnvelopeError('envelope_decrypt_failed', 'ciphertext shorter than its tag');
  const bodyLength = ciphertext.length - N_T;
  try {
    const decipher = createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: N_T });
    decipher.setAuthTag(ciphertext.subarray(bodyLength));
    decipher.setAAD(aad, { plaintextLength: bodyLength });
    const body = decipher.update(ciphertext.subarray(0, bodyLength));
    decipher.final();
    return view(body);
  } catch (cause) {
    throw new EnvelopeError('envelope_decrypt_failed', undefined, { cause });
  }
}

export function x25519Generate(): KeyPair {
  return rawPair(generatePrivateKey('x25519'));
}

export function x25519PublicFromPrivate(privateKey: Uint8Array): Uint8Array {
  return cachedPrivateKey('x25519', privateKey).publicRaw;
}

export function hpkeDeriveKeyPair(ikm: Uint8Array): KeyPair {
  const dkpPrk = labeledExtract(EMPTY, LABEL.dkpPrk, ikm);
  const privateKey = view(labeledExpand(dkpPrk, LABEL.sk, EMPTY, N_SK));
  return { privateKey, publicKey: rawPublic(createPublicKey(privateKeyFromRaw('x25519', privateKey))) };
}

export function hpkeSetupBaseS(
  recipientPublic: Uint8Array,
  info: Uint8Array,
  ephemeralPrivate?: Uint8Array,
): HpkeSenderContext {
  const { enc, sharedSecret } = encap(recipientPublic, ephemeralPrivate);
  return { enc, ...keySchedule(sharedSecret, info) };
}

export function hpkeSetupBaseR(enc: Uint8Array, recipientPrivate: Uint8Array, info: Uint8Array): HpkeKeySchedule {
  return keySchedule(decap(enc, recipientPrivate), info);
}

export function hpkeContextSeal(ctx: HpkeKeySchedule, seq: number, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  return aeadSeal(ctx.key, nonceForSequence(ctx.baseNonce, seq), aad, plaintext);
}

export function hpkeContextOpen(
  ctx: HpkeKeySchedule,
  seq: number,
  aad: Uint8Array,
  ciphertext: Uint8Array,
): Uint8Array {
  return aeadOpen(ctx.key, nonceForSequence(ctx.baseNonce, seq), aad, ciphertext);
}

/** Single-shot SealBase: a fresh ephemeral key (or `ephemeralPrivate`, for test vectors only). */
export function hpkeSealBase(
  recipientPublic: Uint8Array,
  info: Uint8Array,
  aad: Uint8Array,
  plaintext: Uint8Array,
  ephemeralPrivate?: Uint8Array,
): HpkeSealed {
  return sealBase(recipientPublic, info, aad, plaintext, ephemeralPrivate, false);
}

/** SealBase with an info Buffer the caller never mutates (the envelope layer's); internal. */
export function sealBase(
  recipientPublic: Uint8Array,
  info: Uint8Array,
  aad: Uint8Array,
  plaintext: Uint8Array,
  ephemeralPrivate: Uint8Array | undefined,
  stableInfo: boolean,
): HpkeSealed {
  const { enc, sharedSecret } = encap(recipientPublic, ephemeralPrivate);
  const { key, baseNonce } = aeadKeys(sharedSecret, info, stableInfo);
  return { enc, ciphertext: aeadSeal(key, baseNonce, aad, plaintext) };
}

/** Single-shot OpenBase; throws `EnvelopeError` (`envelope_decrypt_failed` or `envelope_invalid_key`). */
export function hpkeOpenBase(
  enc: Uint8Array,
  recipientPrivate: Uint8Array,
  info: Uint8Array,
  aad: Uint8Array,
  ciphertext: Uint8Array,
): Uint8Array {
  return openBase(enc, recipientPrivate, info, aad, ciphertext, false);
}

/** OpenBase with an info Buffer the caller never mutates (the envelope layer's); internal. */
export function openBase(
  enc: Uint8Array,
  recipientPrivate: Uint8Array,
  info: Uint8Array,
  aad: Uint8Array,
  ciphertext: Uint8Array,
  stableInfo: boolean,
): Uint8Array {
  const { key, baseNonce } = aeadKeys(decap(enc, recipientPrivate), info, stableInfo);
  return aeadOpen(key, baseNonce, aad, ciphertext);
}

export const nativeHpke: HpkeApi = {
  deriveKeyPair: hpkeDeriveKeyPair,
  setupBaseS: hpkeSetupBaseS,
  setupBaseR: hpkeSetupBaseR,
  contextSeal: hpkeContextSeal,
  contextOpen: hpkeContextOpen,
  sealBase: hpkeSealBase,
  openBase: hpkeOpenBase,
};
