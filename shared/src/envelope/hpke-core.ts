/**
 * RFC 9180 HPKE, base mode, for the one suite of `hpke-suite.ts`, written once over a
 * platform's primitives: HMAC-SHA256, X25519 and ChaCha20-Poly1305. The browser build
 * (`hpke.ts`, @noble/*) and the Node build (`../node/hpke.ts`, node:crypto) differ only in
 * those; the key schedule, the checks and the caches are these. Every labeled KDF step is
 * one HMAC: LabeledExtract(salt, label, ikm) = HMAC(salt, prefix || ikm), and
 * LabeledExpand(prk, label, info, L) for L <= 32 = the first HKDF-Expand block, truncated.
 */
import { EnvelopeError } from './errors.js';
import {
  EXPAND_COUNTER_1,
  HPKE_MODE_BASE,
  type HpkeApi,
  type HpkeKeySchedule,
  type HpkeSealed,
  isAllZero,
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

/** What a platform gives the HPKE of this suite. */
export interface HpkePrimitives {
  /** HMAC-SHA256 of the parts, in order, under `key`. */
  hmac(key: Uint8Array, ...parts: Uint8Array[]): Uint8Array;
  /** The ephemeral public key (fresh, or of `ephemeralPrivate`) and X25519(skE, pkR). */
  encapDh(recipientPublic: Uint8Array, ephemeralPrivate?: Uint8Array): { enc: Uint8Array; dh: Uint8Array };
  /** X25519(skR, enc), and pkR. */
  decapDh(enc: Uint8Array, recipientPrivate: Uint8Array): { dh: Uint8Array; recipientPublic: Uint8Array };
  x25519PublicFromPrivate(privateKey: Uint8Array): Uint8Array;
  /** ChaCha20-Poly1305: ciphertext || tag. */
  aeadSeal(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array;
  /** ChaCha20-Poly1305: throws when the tag does not match. */
  aeadOpen(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array;
}

/**
 * The HPKE operations, plus SealBase/OpenBase with `stableInfo`: an info array the caller
 * never mutates (the envelope layer's cached ones), whose key_schedule_context is then
 * also cached per instance.
 */
export interface HpkeImplementation extends HpkeApi {
  sealBaseWith(
    recipientPublic: Uint8Array,
    info: Uint8Array,
    aad: Uint8Array,
    plaintext: Uint8Array,
    ephemeralPrivate: Uint8Array | undefined,
    stableInfo: boolean,
  ): HpkeSealed;
  openBaseWith(
    enc: Uint8Array,
    recipientPrivate: Uint8Array,
    info: Uint8Array,
    aad: Uint8Array,
    ciphertext: Uint8Array,
    stableInfo: boolean,
  ): Uint8Array;
}

const EMPTY = new Uint8Array(0);
const CONTEXT_CACHE_MAX = 64;

function checkLength(bytes: Uint8Array, length: number, what: string): void {
  if (!(bytes instanceof Uint8Array) || bytes.length !== length) {
    throw new EnvelopeError('envelope_invalid_key', `${what} must be ${length} bytes`);
  }
}

/** A DH step: a refused key or the all-zero output (a low-order peer key, RFC 9180 §7.1.4) aborts. */
function checkedDh<T extends { dh: Uint8Array }>(run: () => T): T {
  let out: T;
  try {
    out = run();
  } catch (cause) {
    if (cause instanceof EnvelopeError) throw cause;
    throw new EnvelopeError('envelope_invalid_key', 'X25519 refused the key', { cause });
  }
  if (isAllZero(out.dh)) throw new EnvelopeError('envelope_invalid_key', 'X25519 produced the all-zero value');
  return out;
}

export function createHpke(p: HpkePrimitives): HpkeImplementation {
  const labeledExtract = (salt: Uint8Array, prefix: Uint8Array, ikm: Uint8Array) => p.hmac(salt, prefix, ikm);
  const labeledExpand = (prk: Uint8Array, prefix: Uint8Array, info: Uint8Array, length: number) => {
    const t1 = p.hmac(prk, prefix, info, EXPAND_COUNTER_1);
    return length === t1.length ? t1 : t1.subarray(0, length);
  };
  // shared_secret = LabeledExpand(eae_prk, "shared_secret", kem_context = enc || pkRm, Nsecret)
  const extractAndExpand = (dh: Uint8Array, enc: Uint8Array, recipientPublic: Uint8Array) => {
    const eaePrk = labeledExtract(EMPTY, LABEL.eaePrk, dh);
    const t1 = p.hmac(eaePrk, LABEL.sharedSecret, enc, recipientPublic, EXPAND_COUNTER_1);
    return N_SECRET === t1.length ? t1 : t1.subarray(0, N_SECRET);
  };

  let pskIdHash: Uint8Array | undefined;
  const contextCache = new Map<string, Uint8Array>();
  const contextByInstance = new WeakMap<Uint8Array, Uint8Array>();

  /** key_schedule_context = mode || psk_id_hash || info_hash; cached per info value (it rarely varies). */
  function keyScheduleContext(info: Uint8Array, stableInfo: boolean): Uint8Array {
    let hit = stableInfo ? contextByInstance.get(info) : undefined;
    if (hit) return hit;
    const cacheKey = String.fromCharCode(...info);
    hit = contextCache.get(cacheKey);
    if (!hit) {
      pskIdHash ??= labeledExtract(EMPTY, LABEL.pskIdHash, EMPTY);
      const infoHash = labeledExtract(EMPTY, LABEL.infoHash, info);
      hit = new Uint8Array(1 + pskIdHash.length + infoHash.length);
      hit[0] = HPKE_MODE_BASE;
      hit.set(pskIdHash, 1);
      hit.set(infoHash, 1 + pskIdHash.length);
      if (contextCache.size >= CONTEXT_CACHE_MAX) contextCache.clear();
      contextCache.set(cacheKey, hit);
    }
    if (stableInfo) contextByInstance.set(info, hit);
    return hit;
  }

  function keySchedule(sharedSecret: Uint8Array, info: Uint8Array, stableInfo: boolean, withExporter: boolean) {
    const ctx = keyScheduleContext(info, stableInfo);
    const secret = labeledExtract(sharedSecret, LABEL.secret, EMPTY); // psk = default_psk = ""
    return {
      sharedSecret,
      key: labeledExpand(secret, LABEL.key, ctx, N_K),
      baseNonce: labeledExpand(secret, LABEL.baseNonce, ctx, N_N),
      exporterSecret: withExporter ? labeledExpand(secret, LABEL.exp, ctx, N_H) : EMPTY,
    };
  }

  function encap(recipientPublic: Uint8Array, ephemeralPrivate?: Uint8Array) {
    checkLength(recipientPublic, N_PK, 'recipient public key');
    if (ephemeralPrivate !== undefined) checkLength(ephemeralPrivate, N_SK, 'ephemeral private key');
    const { enc, dh } = checkedDh(() => p.encapDh(recipientPublic, ephemeralPrivate));
    return { enc, sharedSecret: extractAndExpand(dh, enc, recipientPublic) };
  }

  function decap(enc: Uint8Array, recipientPrivate: Uint8Array): Uint8Array {
    checkLength(enc, N_ENC, 'enc');
    checkLength(recipientPrivate, N_SK, 'recipient private key');
    const { dh, recipientPublic } = checkedDh(() => p.decapDh(enc, recipientPrivate));
    return extractAndExpand(dh, enc, recipientPublic);
  }

  function open(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array {
    if (ciphertext.length < N_T) throw new EnvelopeError('envelope_decrypt_failed', 'ciphertext shorter than its tag');
    try {
      return p.aeadOpen(key, nonce, aad, ciphertext);
    } catch (cause) {
      throw new EnvelopeError('envelope_decrypt_failed', undefined, { cause });
    }
  }

  const hpke: HpkeImplementation = {
    deriveKeyPair(ikm) {
      const dkpPrk = labeledExtract(EMPTY, LABEL.dkpPrk, ikm);
      const privateKey = labeledExpand(dkpPrk, LABEL.sk, EMPTY, N_SK);
      return { privateKey, publicKey: p.x25519PublicFromPrivate(privateKey) };
    },
    setupBaseS(recipientPublic, info, ephemeralPrivate) {
      const { enc, sharedSecret } = encap(recipientPublic, ephemeralPrivate);
      return { enc, ...keySchedule(sharedSecret, info, false, true) };
    },
    setupBaseR: (enc, recipientPrivate, info) => keySchedule(decap(enc, recipientPrivate), info, false, true),
    contextSeal: (ctx: HpkeKeySchedule, seq, aad, plaintext) =>
      p.aeadSeal(ctx.key, nonceForSequence(ctx.baseNonce, seq), aad, plaintext),
    contextOpen: (ctx: HpkeKeySchedule, seq, aad, ciphertext) =>
      open(ctx.key, nonceForSequence(ctx.baseNonce, seq), aad, ciphertext),
    sealBaseWith(recipientPublic, info, aad, plaintext, ephemeralPrivate, stableInfo) {
      const { enc, sharedSecret } = encap(recipientPublic, ephemeralPrivate);
      const { key, baseNonce } = keySchedule(sharedSecret, info, stableInfo, false);
      return { enc, ciphertext: p.aeadSeal(key, baseNonce, aad, plaintext) };
    },
    openBaseWith(enc, recipientPrivate, info, aad, ciphertext, stableInfo) {
      const { key, baseNonce } = keySchedule(decap(enc, recipientPrivate), info, stableInfo, false);
      return open(key, baseNonce, aad, ciphertext);
    },
    sealBase: (recipientPublic, info, aad, plaintext, ephemeralPrivate) =>
      hpke.sealBaseWith(recipientPublic, info, aad, plaintext, ephemeralPrivate, false),
    openBase: (enc, recipientPrivate, info, aad, ciphertext) =>
      hpke.openBaseWith(enc, recipientPrivate, info, aad, ciphertext, false),
  };
  return hpke;
}
