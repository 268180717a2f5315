import { describe, expect, it } from 'vitest';
import { TokenBuckets } from './rate-limit.js';

describe('TokenBuckets', () => {
  const clock = () => {
    let t = 1_000_000;
    return { now: () => t, advance: (ms: number) => (t += ms) };
  };

  it('allows a burst of the capacity, then refills at the rate on the injected clock', () => {
    const c = clock();
    const b = new TokenBuckets({ capacity: 3, perSecond: 0.5, now: c.now });
    expect([b.take('k'), b.take('k'), b.take('k')]).toEqual([0, 0, 0]);
    expect(b.take('k')).toBe(2); // one token at 0.5/s: 2 s
    c.advance(1999);
    expect(b.take('k')).toBe(1);
    c.advance(1);
    expect(b.take('k')).toBe(0);
    expect(b.take('other')).toBe(0);
  });

  it('lets a cost above the capacity through once the bucket is full, leaving it in debt', () => {
    const c = clock();
    const b = new TokenBuckets({ capacity: 10, perSecond: 10, now: c.now });
    expect(b.take('k', 25)).toBe(0);
    expect(b.take('k', 1)).toBe(2); // -15 tokens: 1.6 s to one
    c.advance(2500); // back to full (capped at 10)
    expect(b.take('k', 10)).toBe(0);
  });

  it('refunds, is off at capacity or rate 0, and forgets the least recently used keys past maxKeys', () => {
    const c = clock();
    const b = new TokenBuckets({ capacity: 1, perSecond: 1, now: c.now, maxKeys: 2 });
    expect(b.take('a')).toBe(0);
    b.refund('a');
    expect(b.take('a')).toBe(0);
    b.take('b');
    b.take('c');
    expect(b.size).toBe(2);
    expect(b.take('a')).toBe(0); // forgotten: full again
    expect(new TokenBuckets({ capacity: 0, perSecond: 1, now: c.now }).take('x', 1e9)).toBe(0);
    expect(new TokenBuckets({ capacity: 5, perSecond: 0, now: c.now }).enabled).toBe(false);
  });
});
