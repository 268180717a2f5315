import { describe, expect, it } from 'vitest';
import { newMessageId } from './message-id.js';
import { ReplayGuard } from './replay-guard.js';

describe('ReplayGuard', () => {
  it('accepts a message id once per sender', () => {
    const guard = new ReplayGuard();
    const id = newMessageId();
    expect(guard.accept('agent-a', id)).toBe(true);
    expect(guard.accept('agent-a', id)).toBe(false);
    expect(guard.has('agent-a', id)).toBe(true);
    expect(guard.accept('agent-b', id)).toBe(true);
    expect(() => guard.assertFresh('agent-a', id)).toThrow(expect.objectContaining({ code: 'envelope_replayed' }));
  });

  it('stays bounded per sender, and an evicted id still cannot be replayed', () => {
    const guard = new ReplayGuard({ maxPerSender: 3 });
    const ids = [1, 2, 3, 4, 5].map((i) => newMessageId(1_700_000_000_000 + i));
    for (const id of ids) expect(guard.accept('a', id)).toBe(true);
    // ids[0] and ids[1] were evicted; the floor refuses them anyway.
    expect(guard.accept('a', ids[0]!)).toBe(false);
    expect(guard.accept('a', ids[1]!)).toBe(false);
    expect(guard.accept('a', ids[4]!)).toBe(false);
    expect(guard.accept('a', newMessageId(1_700_000_000_010))).toBe(true);
  });

  it('stays bounded in senders', () => {
    const guard = new ReplayGuard({ maxSenders: 2 });
    guard.accept('a', newMessageId());
    guard.accept('b', newMessageId());
    guard.accept('c', newMessageId());
    expect(guard.size).toBe(2);
  });

  it('refuses a non-UUIDv7 id', () => {
    expect(() => new ReplayGuard().accept('a', 'nope')).toThrow(
      expect.objectContaining({ code: 'envelope_malformed' }),
    );
  });
});
