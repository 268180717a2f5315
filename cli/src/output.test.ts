import { describe, expect, it } from 'vitest';
import { keyValues, table } from './output.js';
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

  it('tables, key-values and message lines write control characters from peers as escapes', () => {
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
