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

  it('refuses an event longer than the limit (sent whole or in pieces), not many short ones in one chunk', async () => {
    const drain = async (chunks: string[]) => {
      const out = [];
      for await (const e of readSse(Readable.from(chunks), 1000)) out.push(e);
      return out;
    };
    const code = { code: 'relay_answer_too_large' };
    await expect(drain([`data: ${'x'.repeat(1001)}\n\n`])).rejects.toMatchObject(code);
    await expect(drain(Array.from({ length: 20 }, () => `data: ${'x'.repeat(100)}\n`))).rejects.toMatchObject(code);
    await expect(drain(['data: ', 'x'.repeat(600), 'x'.repeat(600)])).rejects.toMatchObject(code);
    const many = Array.from({ length: 50 }, (_, i) => `id: ${i}\ndata: ${'y'.repeat(100)}\n\n`).join('');
    expect(await drain([many])).toHaveLength(50);
  });
});
