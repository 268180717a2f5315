/**
 * One table of Ed25519 vectors run against both verifiers (node:crypto and @noble): each
 * must give the table's answer, so the two accept exactly the same signatures. The
 * vectors are built here from fixed seeds with @noble's point arithmetic.
 */
import { diffieHellman } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { concatBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import {
  bytesToBigintLE,
  ed25519PublicKeyProblem,
  X25519_SMALL_ORDER_U,
  x25519PublicKeyProblem,
} from '../envelope/key-checks.js';
import * as nobleKeys from '../envelope/keys.js';
import * as nativeEd from './ed25519.js';
import { generatePrivateKey, publicKeyFromRaw } from './key-objects.js';

const Point = ed25519.Point;
const L = Point.Fn.ORDER;
const P = 2n ** 255n - 19n;
type EdPoint = ReturnType<typeof Point.fromBytes>;

const le32 = (n: bigint): Uint8Array => {
  const out = new Uint8Array(32);
  for (let i = 0, v = n; i < 32; i++, v >>= 8n) out[i] = Number(v & 255n);
  return out;
};
const text = (s: string) => new TextEncoder().encode(s);
const challenge = (r: Uint8Array, a: Uint8Array, m: Uint8Array) => bytesToBigintLE(sha512(concatBytes(r, a, m))) % L;
const sig = (r: Uint8Array, s: bigint) => concatBytes(r, le32(s));

const IDENTITY = Point.ZERO.toBytes();
const ZERO_S = 0n;
/** A point of order 8 (from the well-known list of small-order encodings). */
const T8 = Point.fromHex('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a');
/** The identity with the sign bit set ("negative zero" x): a non-canonical encoding. */
const NEG_ZERO = Uint8Array.from(IDENTITY);
NEG_ZERO[31] = 0x80 | (NEG_ZERO[31] as number);
/** The identity encoded as y = p + 1 (y >= p): a non-canonical encoding. */
const Y_ABOVE_P = le32(P + 1n);

const MESSAGE = text('the statement the relay checks');
const SEED = new Uint8Array(32).fill(7);
const honest = ed25519.utils.getExtendedPublicKey(SEED);
const A = honest.pointBytes;
const a = honest.scalar;
const valid = ed25519.sign(MESSAGE, SEED);

/** R = identity with S = k·a: only the key holder can make it, and it verifies (nonce 0). */
function zeroNonce(r: Uint8Array): Uint8Array {
  return sig(r, (challenge(r, A, MESSAGE) * a) % L);
}

/** The first message, counting up, for which the small-order key T8 with (R = identity, S = 0) verifies cofactorless. */
function messageForSmallOrderKey(): Uint8Array {
  for (let i = 0; ; i++) {
    const m = text(`message ${i}`);
    if (challenge(IDENTITY, T8.toBytes(), m) % 8n === 0n) return m;
  }
}

/** A mixed-order key aB + T8 with a signature that satisfies the cofactorless equation. */
function mixedOrderVector(): { key: Uint8Array; signature: Uint8Array } {
  const key = Point.BASE.multiply(a).add(T8).toBytes();
  for (let r = 1n; ; r++) {
    for (let j = 0n; j < 8n; j++) {
      const R: EdPoint = Point.BASE.multiply(r).add(T8.multiplyUnsafe(j));
      const rBytes = R.toBytes();
      const k = challenge(rBytes, key, MESSAGE);
      if ((k + j) % 8n === 0n) return { key, signature: sig(rBytes, (r + k * a) % L) };
    }
  }
}

/** R with a torsion component: the cofactored equation holds, the cofactorless one does not. */
function torsionR(): Uint8Array {
  const r = 12345n;
  const R = Point.BASE.multiply(r).add(T8).toBytes();
  return sig(R, (r + challenge(R, A, MESSAGE) * a) % L);
}

const smallOrderMessage = messageForSmallOrderKey();
const mixed = mixedOrderVector();

interface Vector {
  name: string;
  key: Uint8Array;
  message: Uint8Array;
  signature: Uint8Array;
  accepted: boolean;
}

const VECTORS: Vector[] = [
  { name: 'an honest signature', key: A, message: MESSAGE, signature: valid, accepted: true },
  { name: 'an honest signature, another message', key: A, message: text('other'), signature: valid, accepted: false },
  { name: 'nonce 0 (R = identity, S = k·a)', key: A, message: MESSAGE, signature: zeroNonce(IDENTITY), accepted: true },
  {
    name: 'non-canonical S (S + L)',
    key: A,
    message: MESSAGE,
    signature: sig(valid.subarray(0, 32), bytesToBigintLE(valid.subarray(32)) + L),
    accepted: false,
  },
  { name: 'S = L', key: A, message: MESSAGE, signature: sig(valid.subarray(0, 32), L), accepted: false },
  { name: 'R with a torsion component', key: A, message: MESSAGE, signature: torsionR(), accepted: false },
  {
    name: 'non-canonical R (negative zero)',
    key: A,
    message: MESSAGE,
    signature: zeroNonce(NEG_ZERO),
    accepted: false,
  },
  { name: 'non-canonical R (y >= p)', key: A, message: MESSAGE, signature: zeroNonce(Y_ABOVE_P), accepted: false },
  {
    name: 'the identity key (R = identity, S = 0)',
    key: IDENTITY,
    message: MESSAGE,
    signature: sig(IDENTITY, ZERO_S),
    accepted: false,
  },
  {
    name: 'the identity key, another message',
    key: IDENTITY,
    message: text('anything at all'),
    signature: sig(IDENTITY, ZERO_S),
    accepted: false,
  },
  {
    name: 'a small-order key (order 8)',
    key: T8.toBytes(),
    message: smallOrderMessage,
    signature: sig(IDENTITY, ZERO_S),
    accepted: false,
  },
  {
    name: 'a mixed-order key (aB + T8)',
    key: mixed.key,
    message: MESSAGE,
    signature: mixed.signature,
    accepted: false,
  },
  {
    name: 'non-canonical key (identity, negative zero)',
    key: NEG_ZERO,
    message: MESSAGE,
    signature: sig(IDENTITY, ZERO_S),
    accepted: false,
  },
  {
    name: 'non-canonical key (identity, y >= p)',
    key: Y_ABOVE_P,
    message: MESSAGE,
    signature: sig(IDENTITY, ZERO_S),
    accepted: false,
  },
  { name: 'a key that is no curve point', key: le32(2n), message: MESSAGE, signature: valid, accepted: false },
];

describe('Ed25519: the node:crypto and @noble verifiers accept exactly the same signatures', () => {
  it.each(VECTORS)('$name → accepted: $accepted', ({ key, message, signature, accepted }) => {
    expect(nativeEd.ed25519Verify(key, message, signature)).toBe(accepted);
    expect(nobleKeys.ed25519Verify(key, message, signature)).toBe(accepted);
  });

  it('every small-order point is refused as a key, in each of its encodings', () => {
    const small = [Point.ZERO, T8, ...[2n, 3n, 4n, 5n, 6n, 7n].map((n) => T8.multiplyUnsafe(n))];
    for (const point of small) {
      expect(ed25519PublicKeyProblem(point.toBytes())).toBeDefined();
      const flipped = point.toBytes();
      flipped[31] = (flipped[31] as number) ^ 0x80;
      expect(ed25519PublicKeyProblem(flipped)).toBeDefined();
    }
  });

  it('random keys are accepted and their signatures verify in both', () => {
    for (let i = 0; i < 8; i++) {
      const pair = nobleKeys.ed25519Generate();
      expect(ed25519PublicKeyProblem(pair.publicKey)).toBeUndefined();
      const signature = nativeEd.ed25519Sign(pair.privateKey, MESSAGE);
      expect(nativeEd.ed25519Verify(pair.publicKey, MESSAGE, signature)).toBe(true);
      expect(nobleKeys.ed25519Verify(pair.publicKey, MESSAGE, signature)).toBe(true);
    }
  });
});

describe('X25519 public keys', () => {
  /** node:crypto's agreement with a fresh key: undefined when OpenSSL refuses it. */
  function agreement(u: Uint8Array): Uint8Array | undefined {
    try {
      return diffieHellman({ privateKey: generatePrivateKey('x25519'), publicKey: publicKeyFromRaw('x25519', u) });
    } catch {
      return undefined;
    }
  }

  it('each listed small-order point is refused, and its agreement is all zeros or refused', () => {
    for (const u of X25519_SMALL_ORDER_U) {
      const bytes = le32(u);
      expect(x25519PublicKeyProblem(bytes)).toBe('a small-order point');
      const shared = agreement(bytes);
      expect(shared === undefined || shared.every((b) => b === 0)).toBe(true);
    }
  });

  it('non-canonical encodings (u >= p, high bit set) are refused', () => {
    for (const u of [P, P + 1n, P + 18n]) expect(x25519PublicKeyProblem(le32(u))).toMatch(/not canonical/);
    const high = nobleKeys.x25519Generate().publicKey;
    high[31] = (high[31] as number) | 0x80;
    expect(x25519PublicKeyProblem(high)).toMatch(/not canonical/);
    expect(x25519PublicKeyProblem(new Uint8Array(31))).toBe('not 32 bytes');
  });

  it('random keys are accepted', () => {
    for (let i = 0; i < 8; i++) expect(x25519PublicKeyProblem(nobleKeys.x25519Generate().publicKey)).toBeUndefined();
  });
});
