import { describe, expect, it } from 'vitest';
import { keyValues, table } from './output.js';

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
});
