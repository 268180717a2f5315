import { describe, expect, it } from 'vitest';
import { printable } from './printable.js';

describe('printable', () => {
  it('writes control characters and text-direction marks as escapes, never as terminal commands', () => {
    // clear the screen, an OSC 52 clipboard write, a carriage return over the line, a C1 CSI, a right-to-left override
    const hostile = 'hi\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\rfake\u009b31m\u202eevil';
    const shown = printable(hostile);
    expect(shown).toBe('hi\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07\\x0dfake\\x9b31m\\u202eevil');
    expect(shown).not.toMatch(/[\p{Cc}\p{Bidi_Control}]/u);
    expect(printable('a\n\tb\x1b', true)).toBe('a\n\tb\\x1b');
    // every code point that is a control or bidi mark, or shows as nothing, comes out escaped
    // (all of them, not a sample); the joiners that shape emoji and scripts stay
    const invisible = new Set([0x200b, 0x2028, 0x2029, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xfeff]);
    for (let c = 0; c <= 0x10ffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const ch = String.fromCodePoint(c);
      if (/[\p{Cc}\p{Bidi_Control}]/u.test(ch) || invisible.has(c)) {
        expect(printable(ch)).toMatch(/^\\(x[0-9a-f]{2}|u[0-9a-f]{4})$/);
      } else if (c < 0x3000) expect(printable(ch)).toBe(ch);
    }
    expect(printable('bob\u200b')).toBe('bob\\u200b');
    expect(printable('👨\u200d👩\u200d👧')).toBe('👨\u200d👩\u200d👧');
  });
});
