import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fromBase64url, toBase64url } from './base64url.js';

describe('base64url', () => {
  it('matches Node for every length and round-trips', () => {
    for (let n = 0; n < 70; n++) {
      const bytes = randomBytes(n);
      const text = toBase64url(bytes);
      expect(text).toBe(bytes.toString('base64url'));
      expect(Buffer.from(fromBase64url(text))).toEqual(bytes);
    }
  });

  it('refuses foreign characters, bad lengths and non-canonical trailing bits', () => {
    expect(() => fromBase64url('ab+c')).toThrow(/character/);
    expect(() => fromBase64url('abcde')).toThrow(/length/);
    expect(() => fromBase64url('AB')).toThrow(/non-canonical/); // 'AA' is the canonical form of one zero byte
    expect(fromBase64url('AA')).toEqual(new Uint8Array([0]));
  });
});
