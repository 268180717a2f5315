import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readSse } from './sse.js';

describe('readSse', () => {
  it('parses events split across chunks, skips comments', async () => {
    const chunks = [
      ': hello\n\n',
      'id: 3\nevent: envelope\nda',
      'ta: {"a":1}\n\n: keepalive\n\nid: 4\r\nevent: envelope\r\ndata: x\r\n\r\n',
    ];
    const out = [];
    for await (const e of readSse(Readable.from(chunks))) out.push(e);
    expect(out).toEqual([
      { id: '3', event: 'envelope', data: '{"a":1}' },
      { id: '4', event: 'envelope', data: 'x' },
    ]);
  });
});
