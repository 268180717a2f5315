import { describe, expect, it } from 'vitest';
import { isMessageId, messageIdMaker, messageIdTimestamp, newMessageId, UUID_V7_PATTERN } from './message-id.js';

describe('newMessageId', () => {
  it('is a lowercase UUIDv7 carrying the timestamp', () => {
    const now = 1_763_800_000_123;
    const id = newMessageId(now);
    expect(id).toMatch(UUID_V7_PATTERN);
    expect(isMessageId(id)).toBe(true);
    expect(messageIdTimestamp(id)).toBe(now);
  });

  it('is unique and time-ordered', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => newMessageId(1_700_000_000_000 + i));
    expect(new Set(ids).size).toBe(1000);
    expect([...ids].sort()).toEqual(ids);
  });

  it('grows within a millisecond, as made (thousands in one)', () => {
    const make = messageIdMaker();
    const now = 1_763_900_000_000;
    const ids = Array.from({ length: 2048 }, () => make(now));
    expect(new Set(ids).size).toBe(2048);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(messageIdTimestamp(id)).toBe(now);
    // and on from one millisecond to the next
    const next = make(now + 1);
    expect(next > (ids.at(-1) as string)).toBe(true);
    // a time before the last one's is kept as given
    expect(messageIdTimestamp(make(now - 5))).toBe(now - 5);
  });

  it('refuses out-of-range times', () => {
    expect(() => newMessageId(-1)).toThrow(RangeError);
    expect(() => newMessageId(2 ** 48)).toThrow(RangeError);
  });
});
