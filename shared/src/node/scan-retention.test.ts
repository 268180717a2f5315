// The send body's scan keeps nothing alive past its caller: the relay scans a large body per
// request, and anything that held the envelopes (and, through their strings, the body) past
// a young-generation collection promoted every body to the old generation, where only full
// collections free them. (Here, not beside the scan: modules under envelope/ stay free of node:*.)
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect, it } from 'vitest';
import { type Envelope, parseEnvelope, scanCanonicalEnvelopes } from '../envelope/format.js';
import { newMessageId } from '../envelope/message-id.js';

const b64 = (n: number, fill: number) => Buffer.alloc(n, fill).toString('base64url');

function envelope(i: number): Envelope {
  return parseEnvelope({
    header: {
      v: 1,
      message_id: newMessageId(1_700_000_000_000 + i),
      sender: 'agent-a',
      recipient: 'agent-b',
      conversation_id: 'conv-1',
      conversation_type: 'direct',
      content_type: 'text',
      sent_at: '2024-02-29T23:59:59.123Z',
      deployment_id: 'dep-test',
      tenant_id: 'tenant-a',
    },
    enc: b64(32, i),
    ciphertext: b64(3000, i),
    signature: b64(64, i),
  });
}

const space = (name: string) => getHeapSpaceStatistics().find((s) => s.space_name === name)?.space_used_size ?? 0;

it('once the caller drops what the scan found, young-generation collections free the body', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options: { type: 'minor' | 'major'; execution: 'sync' }) => void;
  const bytes = Buffer.from(JSON.stringify({ envelopes: Array.from({ length: 150 }, (_, i) => envelope(i)) }));
  /** The text's size if it was a young large object, or undefined (the attempt then says nothing). */
  const scan = (): number | undefined => {
    const young = space('new_large_object_space');
    // ~670 KB of text: a young large object, promoted as a whole if it survives a scavenge
    // (the relay scans its bodies' bytes, an envelope at a time; a string is the harder case)
    const text = bytes.toString('latin1');
    if (space('new_large_object_space') - young < text.length) return undefined;
    // (no expect() on what was found: an assertion may hold its subject)
    if (scanCanonicalEnvelopes(text, 1000)?.length !== 150) throw new Error('the body did not scan');
    // V8 keeps the subject of the last regular expression match (RegExp.$1 and the like)
    // until the next match anywhere, which in the relay is a moment later
    /./.exec('.');
    return text.length;
  };
  // Anything else in this process may keep a young object alive for a moment (the suite
  // runs test files side by side): an attempt that sees the body freed settles it, and a
  // scan that kept its body keeps it every time.
  const attempts: string[] = [];
  while (attempts.length < 3 && !attempts.includes('freed')) {
    gc({ type: 'major', execution: 'sync' });
    const before = space('large_object_space');
    const size = scan();
    await new Promise((r) => setTimeout(r, 0));
    gc({ type: 'minor', execution: 'sync' });
    gc({ type: 'minor', execution: 'sync' });
    if (size === undefined) attempts.push('not young');
    else attempts.push(space('large_object_space') - before < size / 2 ? 'freed' : 'promoted');
  }
  expect(attempts).toContain('freed');
});
