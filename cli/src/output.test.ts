import { describe, expect, it } from 'vitest';
import { keyValues, printable, table } from './output.js';
import { messageLine, messagesTable } from './render.js';

describe('output', () => {
  it('aligns a table under upper-case headers, with - for empty cells', () => {
    const text = table(
      [
        ['name', 'name'],
        ['agent number', 'n'],
      ],
      [
        { name: 'alice', n: '1001' },
        { name: 'b', n: null },
      ],
      'none',
    );
    expect(text).toBe('NAME   AGENT NUMBER\nalice  1001\nb      -\n');
    expect(table([['a', 'a']], [], 'Nothing.')).toBe('Nothing.\n');
  });

  it('keyValues aligns labels and leaves out undefined values', () => {
    expect(
      keyValues([
        ['a', '1'],
        ['long', ['x', 'y']],
        ['gone', undefined],
      ]),
    ).toBe('a:    1\nlong: x, y\n');
  });

  it('writes control characters from peers as escapes, never as terminal commands', () => {
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
    const m = {
      message_id: 'm1',
      conversation_id: 'dm:a:b',
      conversation_type: 'direct',
      direction: 'inbound',
      from: 'a\x1b]0;title\x07',
      to: 'b',
      content_type: 'text',
      content: `line one\nline two\x1b[2J`,
      sent_at: '2026-11-24T00:00:00.000Z',
      received_at: '2026-11-24T00:00:01.000Z',
      state: 'received',
    } as unknown as Parameters<typeof messageLine>[0];
    for (const text of [
      messageLine(m),
      messagesTable([m]),
      keyValues([
        ['name', m.from],
        ['list', [m.from]],
      ]),
    ]) {
      expect(text).not.toContain('\x1b');
      expect(text).toContain('\\x1b');
    }
    expect(messageLine(m)).toContain('line one\n  line two\\x1b[2J');
  });
});
