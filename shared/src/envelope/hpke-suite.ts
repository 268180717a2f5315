/**
 * RFC 9180 constants for the one suite svc uses — base mode, DHKEM(X25519, HKDF-SHA256),
 * HKDF-SHA256, ChaCha20-Poly1305 — and the byte strings of its labeled KDF steps.
 * Shared by the @noble implementation (`hpke.ts`) and the node:crypto one
 * (`../node/hpke.ts`), so both build byte-identical KDF inputs.
 */
import { utf8 } from '../base64url.js';

export const HPKE_MODE_BASE = 0x00;
export const KEM_ID = 0x0020;
export const KDF_ID = 0x0001;
export const AEAD_ID = 0x0003;

/** Nsecret, Nenc, Npk, Nsk of DHKEM(X25519, HKDF-SHA256); Nk, Nn, Nt of ChaCha20-Poly1305; Nh of SHA-256. */
export const N_SECRET = 32;
export const N_ENC = 32;
export const N_PK = 32;
export const N_SK = 32;
export const N_K = 32;
export const N_N = 12;
export const N_T = 16;
export const N_H = 32;

export interface KeyPair {
  privateKey: Uint8Array;
  publicKey: Uint8Array;
}

/** The outputs of KeySchedule (RFC 9180 §5.1) for one context. */
export interface HpkeKeySchedule {
  sharedSecret: Uint8Array;
  key: Uint8Array;
  baseNonce: Uint8Array;
  exporterSecret: Uint8Array;
}

export interface HpkeSenderContext extends HpkeKeySchedule {
  enc: Uint8Array;
}

export interface HpkeSealed {
  enc: Uint8Array;
  ciphertext: Uint8Array;
}

/** The same HPKE operations, implemented once on @noble/* and once on node:crypto. */
export interface HpkeApi {
  /** DeriveKeyPair(ikm) of DHKEM(X25519, HKDF-SHA256), RFC 9180 §7.1.3. */
  deriveKeyPair(ikm: Uint8Array): KeyPair;
  /** SetupBaseS; `ephemeralPrivate` fixes skE (test vectors only). */
  setupBaseS(recipientPublic: Uint8Array, info: Uint8Array, ephemeralPrivate?: Uint8Array): HpkeSenderContext;
  setupBaseR(enc: Uint8Array, recipientPrivate: Uint8Array, info: Uint8Array): HpkeKeySchedule;
  /** Seal/Open of a context at an explicit sequence number (no state kept). */
  contextSeal(ctx: HpkeKeySchedule, seq: number, aad: Uint8Array, plaintext: Uint8Array): Uint8Array;
  contextOpen(ctx: HpkeKeySchedule, seq: number, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array;
  /** Single-shot SealBase/OpenBase (RFC 9180 §6.1). */
  sealBase(
    recipientPublic: Uint8Array,
    info: Uint8Array,
    aad: Uint8Array,
    plaintext: Uint8Array,
    ephemeralPrivate?: Uint8Array,
  ): HpkeSealed;
  openBase(
    enc: Uint8Array,
    recipientPrivate: Uint8Array,
    info: Uint8Array,
    aad: Uint8Array,
    ciphertext: Uint8Array,
  ): Uint8Array;
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

const i2osp2 = (n: number): Uint8Array => Uint8Array.of((n >>> 8) & 0xff, n & 0xff);

/** suite_id = "KEM" || I2OSP(kem_id, 2) */
export const KEM_SUITE_ID = concatBytes(utf8('KEM'), i2osp2(KEM_ID));
/** suite_id = "HPKE" || I2OSP(kem_id, 2) || I2OSP(kdf_id, 2) || I2OSP(aead_id, 2) */
export const HPKE_SUITE_ID = concatBytes(utf8('HPKE'), i2osp2(KEM_ID), i2osp2(KDF_ID), i2osp2(AEAD_ID));

const VERSION_LABEL = utf8('HPKE-v1');

/** LabeledExtract's labeled_ikm without the ikm: "HPKE-v1" || suite_id || label. */
export function labeledIkmPrefix(suiteId: Uint8Array, label: string): Uint8Array {
  return concatBytes(VERSION_LABEL, suiteId, utf8(label));
}

/** LabeledExpand's labeled_info without the info: I2OSP(L, 2) || "HPKE-v1" || suite_id || label. */
export function labeledInfoPrefix(suiteId: Uint8Array, label: string, length: number): Uint8Array {
  return concatBytes(i2osp2(length), VERSION_LABEL, suiteId, utf8(label));
}

/** Every labeled step of this suite, precomputed (prefixes of the HMAC messages). */
export const LABEL = {
  dkpPrk: labeledIkmPrefix(KEM_SUITE_ID, 'dkp_prk'),
  sk: labeledInfoPrefix(KEM_SUITE_ID, 'sk', N_SK),
  eaePrk: labeledIkmPrefix(KEM_SUITE_ID, 'eae_prk'),
  sharedSecret: labeledInfoPrefix(KEM_SUITE_ID, 'shared_secret', N_SECRET),
  pskIdHash: labeledIkmPrefix(HPKE_SUITE_ID, 'psk_id_hash'),
  infoHash: labeledIkmPrefix(HPKE_SUITE_ID, 'info_hash'),
  secret: labeledIkmPrefix(HPKE_SUITE_ID, 'secret'),
  key: labeledInfoPrefix(HPKE_SUITE_ID, 'key', N_K),
  baseNonce: labeledInfoPrefix(HPKE_SUITE_ID, 'base_nonce', N_N),
  exp: labeledInfoPrefix(HPKE_SUITE_ID, 'exp', N_H),
} as const;

/** HKDF-Expand's single-block counter (every output here is at most one SHA-256 block). */
export const EXPAND_COUNTER_1 = Uint8Array.of(1);

/** The nonce for sequence number `seq`: base_nonce XOR I2OSP(seq, Nn). */
export function nonceForSequence(baseNonce: Uint8Array, seq: number): Uint8Array {
  if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError('sequence number must be a non-negative integer');
  const nonce = Uint8Array.from(baseNonce);
  let rest = seq;
  for (let i = nonce.length - 1; i >= 0 && rest > 0; i--) {
    nonce[i] = (nonce[i] as number) ^ (rest % 256);
    rest = Math.floor(rest / 256);
  }
  return nonce;
}

/** RFC 9180 §7.1.4: an all-zero X25519 output (a low-order peer key) must abort. */
export function isAllZero(bytes: Uint8Array): boolean {
  let acc = 0;
  for (let i = 0; i < bytes.length; i++) acc |= bytes[i] as number;
  return acc === 0;
}
