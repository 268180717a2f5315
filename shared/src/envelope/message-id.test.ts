import { describe, expect, it } from 'vitest';
import { isMessageId, messageIdTimestamp, newMessageId, UUID_V7_PATTERN } from './message-id.js';

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

  it('refuses out-of-range times', () => {
    expect(() => newMessageId(-1)).toThrow(RangeError);
    expect(() => newMessageId(2 ** 48)).toThrow(RangeError);
  });
});
