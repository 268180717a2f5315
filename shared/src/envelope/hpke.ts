/**
 * RFC 9180 HPKE, base mode, for the one suite in `hpke-suite.ts`, on @noble/* (browser-safe).
 * The node:crypto twin is `../node/hpke.ts`; both give identical bytes.
 */
import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { x25519 } from '@noble/curves/ed25519.js';
import { expand, extract } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { EnvelopeError } from './errors.js';
import {
  concatBytes,
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
  N_PK,
  N_SECRET,
  N_SK,
  N_T,
  nonceForSequence,
} from './hpke-suite.js';

const EMPTY = new Uint8Array(0);

const labeledExtract = (salt: Uint8Array, prefix: Uint8Array, ikm: Uint8Array): Uint8Array =>
  extract(sha256, concatBytes(prefix, ikm), salt);

const labeledExpand = (prk: Uint8Array, prefix: Uint8Array, info: Uint8Array, length: number): Uint8Array =>
  expand(sha256, prk, concatBytes(prefix, info), length);

function checkLength(bytes: Uint8Array, length: number, what: string): void {
  if (!(bytes instanceof Uint8Array) || bytes.length !== length) {
    throw new EnvelopeError('envelope_invalid_key', `${what} must be ${length} bytes`);
  }
}

function dh(privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  let out: Uint8Array;
  try {
    out = x25519.getSharedSecret(privateKey, publicKey);
  } catch (cause) {
    throw new EnvelopeError('envelope_invalid_key', 'X25519 refused the key', { cause });
  }
  if (isAllZero(out)) throw new EnvelopeError('envelope_invalid_key', 'X25519 produced the all-zero value');
  return out;
}

function extractAndExpand(dhOut: Uint8Array, kemContext: Uint8Array): Uint8Array {
  const eaePrk = labeledExtract(EMPTY, LABEL.eaePrk, dhOut);
  return labeledExpand(eaePrk, LABEL.sharedSecret, kemContext, N_SECRET);
}

let pskIdHash: Uint8Array | undefined;
const contextCache = new Map<string, Uint8Array>();
const CONTEXT_CACHE_MAX = 64;

/** key_schedule_context = mode || psk_id_hash || info_hash; cached per info (it rarely varies). */
function keyScheduleContext(info: Uint8Array): Uint8Array {
  const cacheKey = String.fromCharCode(...info);
  const hit = contextCache.get(cacheKey);
  if (hit) return hit;
  pskIdHash ??= labeledExtract(EMPTY, LABEL.pskIdHash, EMPTY);
  const infoHash = labeledExtract(EMPTY, LABEL.infoHash, info);
  const ctx = concatBytes(Uint8Array.of(HPKE_MODE_BASE), pskIdHash, infoHash);
  if (contextCache.size >= CONTEXT_CACHE_MAX) contextCache.clear();
  contextCache.set(cacheKey, ctx);
  return ctx;
}

function keySchedule(sharedSecret: Uint8Array, info: Uint8Array, withExporter: boolean): HpkeKeySchedule {
  const ctx = keyScheduleContext(info);
  const secret = labeledExtract(sharedSecret, LABEL.secret, EMPTY); // psk = default_psk = ""
  return {
    sharedSecret,
    key: labeledExpand(secret, LABEL.key, ctx, N_K),
    baseNonce: labeledExpand(secret, LABEL.baseNonce, ctx, N_N),
    exporterSecret: withExporter ? labeledExpand(secret, LABEL.exp, ctx, N_H) : EMPTY,
  };
}

function encap(
  recipientPublic: Uint8Array,
  ephemeralPrivate?: Uint8Array,
): { enc: Uint8Array; sharedSecret: Uint8Array } {
  checkLength(recipientPublic, N_PK, 'recipient public key');
  let skE = ephemeralPrivate;
  if (skE === undefined) skE = x25519.utils.randomSecretKey();
  else checkLength(skE, N_SK, 'ephemeral private key');
  const enc = x25519.getPublicKey(skE);
  const dhOut = dh(skE, recipientPublic);
  return { enc, sharedSecret: extractAndExpand(dhOut, concatBytes(enc, recipientPublic)) };
}

function decap(enc: Uint8Array, recipientPrivate: Uint8Array): Uint8Array {
  checkLength(enc, N_ENC, 'enc');
  checkLength(recipientPrivate, N_SK, 'recipient private key');
  const dhOut = dh(recipientPrivate, enc);
  return extractAndExpand(dhOut, concatBytes(enc, x25519.getPublicKey(recipientPrivate)));
}

export function hpkeDeriveKeyPair(ikm: Uint8Array): KeyPair {
  const dkpPrk = labeledExtract(EMPTY, LABEL.dkpPrk, ikm);
  const privateKey = labeledExpand(dkpPrk, LABEL.sk, EMPTY, N_SK);
  return { privateKey, publicKey: x25519.getPublicKey(privateKey) };
}

export function hpkeSetupBaseS(
  recipientPublic: Uint8Array,
  info: Uint8Array,
  ephemeralPrivate?: Uint8Array,
): HpkeSenderContext {
  const { enc, sharedSecret } = encap(recipientPublic, ephemeralPrivate);
  return { enc, ...keySchedule(sharedSecret, info, true) };
}

export function hpkeSetupBaseR(enc: Uint8Array, recipientPrivate: Uint8Array, info: Uint8Array): HpkeKeySchedule {
  return keySchedule(decap(enc, recipientPrivate), info, true);
}

export function hpkeContextSeal(ctx: HpkeKeySchedule, seq: number, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  return chacha20poly1305(ctx.key, nonceForSequence(ctx.baseNonce, seq), aad).encrypt(plaintext);
}

export function hpkeContextOpen(
  ctx: HpkeKeySchedule,
  seq: number,
  aad: Uint8Array,
  ciphertext: Uint8Array,
): Uint8Array {
  if (ciphertext.length < N_T) throw new EnvelopeError('envelope_decrypt_failed', 'ciphertext shorter than its tag');
  try {
    return chacha20poly1305(ctx.key, nonceForSequence(ctx.baseNonce, seq), aad).decrypt(ciphertext);
  } catch (cause) {
    throw new EnvelopeError('envelope_decrypt_failed', undefined, { cause });
  }
}

/** Single-shot SealBase: a fresh ephemeral key (or `ephemeralPrivate`, for test vectors only). */
export function hpkeSealBase(
  recipientPublic: Uint8Array,
  info: Uint8Array,
  aad: Uint8Array,
  plaintext: Uint8Array,
  ephemeralPrivate?: Uint8Array,
): HpkeSealed {
  const { enc, sharedSecret } = encap(recipientPublic, ephemeralPrivate);
  const { key, baseNonce } = keySchedule(sharedSecret, info, false);
  return { enc, ciphertext: chacha20poly1305(key, baseNonce, aad).encrypt(plaintext) };
}

/** Single-shot OpenBase; throws `EnvelopeError` (`envelope_decrypt_failed` or `envelope_invalid_key`). */
export function hpkeOpenBase(
  enc: Uint8Array,
  recipientPrivate: Uint8Array,
  info: Uint8Array,
  aad: Uint8Array,
  ciphertext: Uint8Array,
): Uint8Array {
  const ctx = keySchedule(decap(enc, recipientPrivate), info, false);
  return hpkeContextOpen(ctx, 0, aad, ciphertext);
}

export const nobleHpke: HpkeApi = {
  deriveKeyPair: hpkeDeriveKeyPair,
  setupBaseS: hpkeSetupBaseS,
  setupBaseR: hpkeSetupBaseR,
  contextSeal: hpkeContextSeal,
  contextOpen: hpkeContextOpen,
  sealBase: hpkeSealBase,
  openBase: hpkeOpenBase,
};
