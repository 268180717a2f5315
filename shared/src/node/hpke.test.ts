// RFC 9180 Appendix A.2.1 vectors, run against both HPKE implementations.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nobleHpke } from '../envelope/hpke.js';
import type { HpkeApi } from '../envelope/hpke-suite.js';
import { nativeHpke } from './hpke.js';

interface Vector {
  mode: number;
  kem_id: number;
  kdf_id: number;
  aead_id: number;
  info: string;
  ikmE: string;
  pkEm: string;
  skEm: string;
  ikmR: string;
  pkRm: string;
  skRm: string;
  enc: string;
  shared_secret: string;
  key: string;
  base_nonce: string;
  exporter_secret: string;
  encryptions: { seq: number; pt: string; aad: string; nonce: string; ct: string }[];
}

const file = new URL('../envelope/test-vectors/rfc9180-x25519-sha256-chacha20poly1305-base.json', import.meta.url);
const { vectors } = JSON.parse(readFileSync(file, 'utf8')) as { vectors: Vector[] };
const hex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));
const toHex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

const implementations: [string, HpkeApi][] = [
  ['noble', nobleHpke],
  ['native', nativeHpke],
];

describe.each(implementations)('RFC 9180 vectors (%s)', (_name, hpke) => {
  it('has vectors for exactly this suite', () => {
    expect(vectors.length).toBeGreaterThan(0);
    for (const v of vectors) expect([v.mode, v.kem_id, v.kdf_id, v.aead_id]).toEqual([0, 0x20, 1, 3]);
  });

  for (const v of vectors) {
    it('DeriveKeyPair gives skEm/pkEm and skRm/pkRm', () => {
      const e = hpke.deriveKeyPair(hex(v.ikmE));
      expect(toHex(e.privateKey)).toBe(v.skEm);
      expect(toHex(e.publicKey)).toBe(v.pkEm);
      const r = hpke.deriveKeyPair(hex(v.ikmR));
      expect(toHex(r.privateKey)).toBe(v.skRm);
      expect(toHex(r.publicKey)).toBe(v.pkRm);
    });

    it('SetupBaseS/R give enc, shared_secret, key, base_nonce, exporter_secret', () => {
      const s = hpke.setupBaseS(hex(v.pkRm), hex(v.info), hex(v.skEm));
      const r = hpke.setupBaseR(hex(v.enc), hex(v.skRm), hex(v.info));
      for (const ctx of [s, r]) {
        expect(toHex(ctx.sharedSecret)).toBe(v.shared_secret);
        expect(toHex(ctx.key)).toBe(v.key);
        expect(toHex(ctx.baseNonce)).toBe(v.base_nonce);
        expect(toHex(ctx.exporterSecret)).toBe(v.exporter_secret);
      }
      expect(toHex(s.enc)).toBe(v.enc);
    });

    it('every listed encryption seals to ct and opens back', () => {
      const s = hpke.setupBaseS(hex(v.pkRm), hex(v.info), hex(v.skEm));
      const r = hpke.setupBaseR(hex(v.enc), hex(v.skRm), hex(v.info));
      for (const e of v.encryptions) {
        expect(toHex(hpke.contextSeal(s, e.seq, hex(e.aad), hex(e.pt)))).toBe(e.ct);
        expect(toHex(hpke.contextOpen(r, e.seq, hex(e.aad), hex(e.ct)))).toBe(e.pt);
      }
    });

    it('single-shot SealBase/OpenBase match sequence 0', () => {
      const e0 = v.encryptions.find((e) => e.seq === 0)!;
      const sealed = hpke.sealBase(hex(v.pkRm), hex(v.info), hex(e0.aad), hex(e0.pt), hex(v.skEm));
      expect(toHex(sealed.enc)).toBe(v.enc);
      expect(toHex(sealed.ciphertext)).toBe(e0.ct);
      expect(toHex(hpke.openBase(hex(v.enc), hex(v.skRm), hex(v.info), hex(e0.aad), hex(e0.ct)))).toBe(e0.pt);
    });
  }
});

describe('HPKE across implementations', () => {
  const info = new TextEncoder().encode('cross');
  const aad = new TextEncoder().encode('aad');
  const pt = new Uint8Array(1024).map((_, i) => i & 0xff);

  it.each([
    ['noble', nobleHpke, 'native', nativeHpke],
    ['native', nativeHpke, 'noble', nobleHpke],
  ] as const)('seal with %s (random ephemeral), open with %s', (_a, sealer, _b, opener) => {
    const r = sealer.deriveKeyPair(new Uint8Array(32).fill(7));
    const sealed = sealer.sealBase(r.publicKey, info, aad, pt);
    expect(opener.openBase(sealed.enc, r.privateKey, info, aad, sealed.ciphertext)).toEqual(pt);
  });

  it.each(implementations)('%s refuses a low-order enc and a flipped tag', (_name, hpke) => {
    const r = hpke.deriveKeyPair(new Uint8Array(32).fill(9));
    const sealed = hpke.sealBase(r.publicKey, info, aad, pt);
    const zeroPoint = new Uint8Array(32); // the identity, a low-order point
    expect(() => hpke.openBase(zeroPoint, r.privateKey, info, aad, sealed.ciphertext)).toThrow(
      expect.objectContaining({ code: 'envelope_invalid_key' }),
    );
    const bad = Uint8Array.from(sealed.ciphertext);
    bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 1;
    expect(() => hpke.openBase(sealed.enc, r.privateKey, info, aad, bad)).toThrow(
      expect.objectContaining({ code: 'envelope_decrypt_failed' }),
    );
    expect(() => hpke.openBase(sealed.enc, r.privateKey, new Uint8Array(0), aad, sealed.ciphertext)).toThrow(
      expect.objectContaining({ code: 'envelope_decrypt_failed' }),
    );
  });
});
