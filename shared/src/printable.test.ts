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
    // every code point that is a control or bidi mark comes out escaped (all of them, not a sample)
    for (let c = 0; c <= 0x10ffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const ch = String.fromCodePoint(c);
      if (/[\p{Cc}\p{Bidi_Control}]/u.test(ch)) expect(printable(ch)).toMatch(/^\\(x[0-9a-f]{2}|u[0-9a-f]{4})$/);
      else if (c < 0x3000) expect(printable(ch)).toBe(ch);
    }
  });
});
