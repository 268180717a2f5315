import { describe, expect, it } from 'vitest';
import { RecentEnvelopes } from './recent-envelopes.js';

const bytes = (n: number, size = 1) => Buffer.alloc(size, n);

describe('RecentEnvelopes', () => {
  it('keeps tenants apart: the same sequence in two tenants is two entries', () => {
    const r = new RecentEnvelopes(10, 1000);
    r.add('t1', 1, bytes(1));
    r.add('t2', 1, bytes(2));
    expect(r.get('t1', 1)).toEqual(bytes(1));
    expect(r.get('t2', 1)).toEqual(bytes(2));
    r.delete('t1', 1);
    expect(r.get('t1', 1)).toBeUndefined();
    expect(r.get('t2', 1)).toEqual(bytes(2));
  });

  it('holds at most maxEntries across tenants, dropping the oldest first', () => {
    const r = new RecentEnvelopes(3, 1000);
    r.add('a', 1, bytes(1));
    r.add('b', 1, bytes(2));
    r.add('a', 2, bytes(3));
    r.add('b', 2, bytes(4));
    expect(r.usage.entries).toBe(3);
    expect(r.get('a', 1)).toBeUndefined();
    expect(r.get('b', 1)).toEqual(bytes(2));
    r.add('c', 9, bytes(5));
    r.add('c', 10, bytes(6));
    expect(r.usage.entries).toBe(3);
    expect([r.get('a', 2), r.get('b', 2), r.get('c', 9), r.get('c', 10)]).toEqual([
      undefined,
      bytes(4),
      bytes(5),
      bytes(6),
    ]);
  });

  it('holds at most maxBytes, a chunk at a time, dropping the oldest first, and never keeps an envelope larger than a chunk', () => {
    // three chunks of 4 bytes
    const r = new RecentEnvelopes(100, 12, 4);
    r.add('a', 1, bytes(1, 4));
    r.add('a', 2, bytes(2, 4));
    r.add('a', 3, bytes(3, 4));
    expect(r.usage).toEqual({ entries: 3, bytes: 12 });
    // the first chunk is written over: its entry goes
    r.add('a', 4, bytes(4, 2));
    expect([r.get('a', 1), r.get('a', 2), r.get('a', 4)]).toEqual([undefined, bytes(2, 4), bytes(4, 2)]);
    // room left in that chunk: nothing else goes
    r.add('a', 5, bytes(5, 2));
    expect(r.usage).toEqual({ entries: 4, bytes: 12 });
    r.add('a', 6, bytes(6, 5));
    expect(r.get('a', 6)).toBeUndefined();
    expect(r.usage).toEqual({ entries: 4, bytes: 12 });
  });

  it('an entry deleted early (acknowledged) releases its bytes once, and its slot is skipped later', () => {
    const r = new RecentEnvelopes(2, 100);
    r.add('a', 1, bytes(1, 10));
    r.delete('a', 1);
    r.delete('a', 1);
    expect(r.usage).toEqual({ entries: 0, bytes: 0 });
    r.add('a', 2, bytes(2, 10));
    r.add('a', 3, bytes(3, 10));
    expect([r.get('a', 2), r.get('a', 3)]).toEqual([bytes(2, 10), bytes(3, 10)]);
    expect(r.usage).toEqual({ entries: 2, bytes: 20 });
  });

  it('a sequence added again outlives the slot of its first copy', () => {
    const r = new RecentEnvelopes(3, 100);
    r.add('a', 1, bytes(1));
    r.add('a', 1, bytes(2));
    r.add('a', 2, bytes(3));
    r.add('a', 3, bytes(4)); // the ring is full: the first copy's slot goes, not the second copy
    expect([r.get('a', 1), r.get('a', 2), r.get('a', 3)]).toEqual([bytes(2), bytes(3), bytes(4)]);
    expect(r.usage).toEqual({ entries: 3, bytes: 3 });
  });

  it('keeps a copy: neither the buffer it was given nor its chunk written over later changes what a reader got', () => {
    const body = new Uint8Array([9, 8, 7, 6, 5]);
    const r = new RecentEnvelopes(10, 6, 3);
    r.add('a', 1, body.subarray(1, 4));
    body.fill(0);
    const got = r.get('a', 1) as Uint8Array;
    expect(got).toEqual(Buffer.from([8, 7, 6]));
    expect(got.buffer).not.toBe(body.buffer);
    r.add('a', 2, bytes(2, 3));
    r.add('a', 3, bytes(3, 3)); // the chunk of entry 1 again
    expect(r.get('a', 1)).toBeUndefined();
    expect(got).toEqual(Buffer.from([8, 7, 6]));
  });
});
