/**
 * scanCanonicalEnvelopes against the general path (JSON.parse + parseEnvelope): whatever
 * the scanner accepts, the general path accepts with the same values and the same
 * canonical bytes; and canonical text the general path accepts, the scanner accepts too.
 * And it keeps nothing alive past its caller. (Here, not beside the scan: that last test
 * reads node's heap statistics, and modules under envelope/ stay free of node:*.)
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { type Envelope, encodeEnvelope, parseEnvelope, scanCanonicalEnvelopes } from '../envelope/format.js';
import { newMessageId } from '../envelope/message-id.js';
import { latin1Text } from './scan-text.js';

const b64 = (n: number, fill = 7) => Buffer.alloc(n, fill).toString('base64url');

function envelope(i: number): Envelope {
  return parseEnvelope({
    header: {
      v: 1,
      message_id: newMessageId(1_700_000_000_000 + i),
      sender: 'agent-a',
      recipient: `agent_B-${i}`,
      conversation_id: 'conv:0001@x.y',
      conversation_type: i % 2 ? 'direct' : 'group',
      content_type: 'text',
      sent_at: '2024-02-29T23:59:59.123Z',
      deployment_id: 'dep-test',
      tenant_id: 'tenant-a',
    },
    enc: b64(32, i),
    ciphertext: b64(16 + i, i),
    signature: b64(64, i),
  });
}

const body = (envs: Envelope[]) => JSON.stringify({ envelopes: envs });

const space = (name: string) => getHeapSpaceStatistics().find((s) => s.space_name === name)?.space_used_size ?? 0;

/** Text as bytes read as latin1, as the relay gives its bodies to the scan. */
const asBytes = (text: string) => latin1Text(Buffer.from(text, 'latin1'));

/** The general path's verdict: the parsed envelopes, or null when anything is refused. */
function general(text: string, max: number): Envelope[] | null {
  try {
    const value = JSON.parse(text) as { envelopes?: unknown };
    if (Object.keys(value).join() !== 'envelopes' || !Array.isArray(value.envelopes)) return null;
    if (value.envelopes.length < 1 || value.envelopes.length > max) return null;
    return value.envelopes.map((e) => parseEnvelope(e));
  } catch {
    return null;
  }
}

/** Deterministic PRNG (mulberry32), so a failure can be replayed. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('scanCanonicalEnvelopes', () => {
  it('JSON.stringify of sealed envelopes is canonical: each envelope is found with its exact canonical bytes', () => {
    const envs = [envelope(1), envelope(2), envelope(3)];
    const text = body(envs);
    const found = scanCanonicalEnvelopes(text, 100);
    expect(found).not.toBeNull();
    expect(found?.map((f) => f.envelope)).toEqual(envs);
    for (const [i, f] of (found ?? []).entries()) {
      expect(text.slice(f.start, f.end)).toBe(encodeEnvelope(envs[i] as Envelope));
      // parseEnvelope finds the scanned value valid, and parses it to the same fields; it
      // parses it afresh: a memo entry for it would keep its text alive (the last test here)
      expect(parseEnvelope(f.envelope)).toEqual(f.envelope);
      expect(parseEnvelope(f.envelope)).not.toBe(f.envelope);
      expect(Object.isFrozen(f.envelope) && Object.isFrozen(f.envelope.header)).toBe(true);
    }
  });

  it('leaves anything but exact canonical text to the general path', () => {
    const e = envelope(1);
    const canonical = body([e]);
    const cases: Array<[string, string]> = [
      ['spaces', JSON.stringify({ envelopes: [e] }, null, 1)],
      [
        'another key order',
        JSON.stringify({
          envelopes: [{ signature: e.signature, header: e.header, enc: e.enc, ciphertext: e.ciphertext }],
        }),
      ],
      ['an escaped character', canonical.replace('agent-a', 'agent\\u002da')],
      ['an extra field', canonical.replace('"v":1}', '"v":1,"x":2}')],
      ['more envelopes than allowed', body([e, envelope(2), envelope(3)])],
      ['no envelopes', '{"envelopes":[]}'],
      ['a trailing comma', canonical.replace(']}', ',]}')],
      ['text after the body', `${canonical} `],
      ['a date that does not exist', canonical.replace('2024-02-29', '2023-02-29')],
      ['enc of the wrong length', canonical.replace(`"enc":"${e.enc}"`, `"enc":"${b64(31)}"`)],
      ['a non-canonical last character', canonical.replace(`"enc":"${e.enc}"`, `"enc":"${e.enc.slice(0, -1)}B"`)],
      [
        'a ciphertext shorter than the tag',
        canonical.replace(`"ciphertext":"${e.ciphertext}"`, `"ciphertext":"${b64(15)}"`),
      ],
      ['version 2', canonical.replace('"v":1}', '"v":2}')],
      ['an uppercase message id', canonical.replace(e.header.message_id, e.header.message_id.toUpperCase())],
    ];
    for (const [what, text] of cases) {
      expect(scanCanonicalEnvelopes(text, 2), what).toBeNull();
      expect(scanCanonicalEnvelopes(asBytes(text), 2), what).toBeNull();
    }
  });

  it('refuses a ciphertext with any byte outside base64url, wherever it is, from bytes as from text', () => {
    // Read from bytes, the ciphertext's alphabet is checked by Node's base64 decoder, which
    // skips what is not base64 (scan-text.ts): this pins that every other byte value is
    // still refused, at either end and inside, in place of a character or added, at every
    // length modulo 4.
    const base64url = new Set('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_');
    let refused = 0;
    for (const bytes of [16, 17, 18, 19]) {
      const e = { ...envelope(1), ciphertext: b64(bytes, 0x5a) };
      const canonical = body([e]);
      const ct = e.ciphertext;
      expect(scanCanonicalEnvelopes(asBytes(canonical), 2)).not.toBeNull();
      for (let code = 0; code < 256; code++) {
        const ch = String.fromCharCode(code);
        if (base64url.has(ch)) continue;
        for (const at of [0, 1, ct.length >> 1, ct.length - 2, ct.length - 1]) {
          for (const bad of [ct.slice(0, at) + ch + ct.slice(at + 1), ct.slice(0, at) + ch + ct.slice(at)]) {
            const text = canonical.replace(`"ciphertext":"${ct}"`, `"ciphertext":"${bad}"`);
            expect(scanCanonicalEnvelopes(asBytes(text), 2), `byte ${code} at ${at} of ${bad.length}`).toBeNull();
            expect(scanCanonicalEnvelopes(text, 2), `byte ${code} at ${at} of ${bad.length}`).toBeNull();
            refused++;
          }
        }
      }
    }
    expect(refused).toBe(4 * 192 * 5 * 2);
    // a ciphertext longer than the decoder's scratch space is decoded into a buffer of its own
    const big = { ...envelope(1), ciphertext: b64(70_000, 0x5a) };
    const canonical = body([big]);
    expect(scanCanonicalEnvelopes(asBytes(canonical), 2)?.[0]?.envelope).toEqual(big);
    for (const ch of ['+', '/', '=', ' ', '"', '\u0080', '\u00ff']) {
      const bad = `${big.ciphertext.slice(0, 50_000)}${ch}${big.ciphertext.slice(50_001)}`;
      const text = canonical.replace(`"ciphertext":"${big.ciphertext}"`, `"ciphertext":"${bad}"`);
      expect(scanCanonicalEnvelopes(asBytes(text), 2), JSON.stringify(ch)).toBeNull();
    }
  });

  it('agrees with the general path on thousands of mutated bodies', () => {
    const random = prng(20261122);
    const alphabet = 'aA0_-.:@"{},[]\\ 7Zz9T';
    const base = body([envelope(1), envelope(2)]);
    let fastAccepted = 0;
    for (let round = 0; round < 6000; round++) {
      let text = base;
      for (let edits = 1 + Math.floor(random() * 2); edits > 0; edits--) {
        const at = Math.floor(random() * text.length);
        const ch = alphabet[Math.floor(random() * alphabet.length)] as string;
        const op = random();
        text =
          op < 0.5
            ? text.slice(0, at) + ch + text.slice(at + 1)
            : op < 0.75
              ? text.slice(0, at) + text.slice(at + 1)
              : text.slice(0, at) + ch + text.slice(at);
      }
      const fast = scanCanonicalEnvelopes(text, 2);
      const slow = general(text, 2);
      // the same answer read from bytes
      expect(scanCanonicalEnvelopes(asBytes(text), 2)).toEqual(fast);
      if (fast) {
        fastAccepted++;
        // soundness: nothing the general path refuses, and the very same values and bytes
        expect(slow, text).not.toBeNull();
        expect(fast.map((f) => f.envelope)).toEqual(slow);
        for (const f of fast) expect(text.slice(f.start, f.end)).toBe(encodeEnvelope(f.envelope));
      } else if (slow && body(slow) === text) {
        // completeness: canonical text the general path accepts is never left to it
        expect.fail(`the scanner missed canonical text: ${text}`);
      }
    }
    // the mutations must also produce accepted bodies, or the soundness check tests nothing
    expect(fastAccepted).toBeGreaterThan(100);
  });

  it('keeps nothing alive: once the caller drops what the scan found, young-generation collections free the body', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options: { type: 'minor' | 'major'; execution: 'sync' }) => void;
    // the relay scans a large body per request: anything that held the envelopes (and, through
    // their strings, the body) past a young-generation collection promoted every body to the
    // old generation, where only full collections free them
    const big = (i: number): Envelope => ({ ...envelope(i), ciphertext: b64(3000, i) });
    const bytes = Buffer.from(body(Array.from({ length: 150 }, (_, i) => big(i))));
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
    // runs test files side by side; a major collection that another file's garbage starts
    // while the body is allocated marks it live, seen 3 attempts in a row once in CI): an
    // attempt that sees the body freed settles it, and a scan that kept its body keeps it
    // every time, however many attempts.
    const attempts: string[] = [];
    while (attempts.length < 10 && !attempts.includes('freed')) {
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
});
