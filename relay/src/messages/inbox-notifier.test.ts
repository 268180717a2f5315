import { describe, expect, it } from 'vitest';
import { FOLLOW_GRACE_MS, InboxNotifier } from './inbox-notifier.js';

function clocked() {
  let t = 1_000_000;
  const notifier = new InboxNotifier(() => t);
  return { notifier, advance: (ms: number) => (t += ms) };
}

describe('InboxNotifier.followed', () => {
  it('is false for a recipient nobody has waited for', () => {
    expect(clocked().notifier.followed('r1')).toBe(false);
  });

  it('is true while a reader waits, and for the grace period after the last one stops', () => {
    const { notifier, advance } = clocked();
    const offA = notifier.subscribe('r1', () => undefined);
    const offB = notifier.subscribe('r1', () => undefined);
    expect(notifier.followed('r1')).toBe(true);
    expect(notifier.followed('r2')).toBe(false);
    offA();
    advance(FOLLOW_GRACE_MS * 2);
    expect(notifier.followed('r1')).toBe(true); // B still waits
    offB();
    advance(FOLLOW_GRACE_MS);
    expect(notifier.followed('r1')).toBe(true);
    advance(1);
    expect(notifier.followed('r1')).toBe(false);
  });

  it('counts the grace period from the last reader that left, not the first', () => {
    const { notifier, advance } = clocked();
    notifier.subscribe('r1', () => undefined)();
    advance(FOLLOW_GRACE_MS - 10);
    notifier.subscribe('r1', () => undefined)();
    advance(20);
    expect(notifier.followed('r1')).toBe(true);
  });

  it('an unsubscribe called twice does not drop a newer reader', () => {
    const { notifier, advance } = clocked();
    const off = notifier.subscribe('r1', () => undefined);
    off();
    let woken = 0;
    notifier.subscribe('r1', () => woken++);
    off();
    advance(FOLLOW_GRACE_MS + 1);
    expect(notifier.followed('r1')).toBe(true);
    notifier.notify('r1');
    expect(woken).toBe(1);
  });

  it('forgets recipients whose readers left long ago', () => {
    const { notifier, advance } = clocked();
    for (let i = 0; i < 3000; i++) notifier.subscribe(`old${i}`, () => undefined)();
    advance(FOLLOW_GRACE_MS + 1);
    for (let i = 0; i < 3000; i++) notifier.subscribe(`new${i}`, () => undefined)();
    // the old ones were swept as the new ones came; at most a sweep's slack of them is left
    expect(notifier.remembered).toBeLessThan(3000 + 1024);
    expect(notifier.followed('old0')).toBe(false);
    expect(notifier.followed('new0')).toBe(true);
    expect(notifier.followed('new2999')).toBe(true);
  });

  it('a read follows the recipient for the grace period, renewed by each read', () => {
    const { notifier, advance } = clocked();
    notifier.read('r1');
    advance(FOLLOW_GRACE_MS);
    expect(notifier.followed('r1')).toBe(true);
    notifier.read('r1');
    advance(FOLLOW_GRACE_MS);
    expect(notifier.followed('r1')).toBe(true);
    advance(1);
    expect(notifier.followed('r1')).toBe(false);
  });

  it('a wait follows the recipient until it ends, then for the grace period', async () => {
    const { notifier, advance } = clocked();
    const waited = notifier.wait('r1', 60_000);
    expect(notifier.followed('r1')).toBe(true);
    notifier.notify('r1');
    await waited;
    advance(FOLLOW_GRACE_MS + 1);
    expect(notifier.followed('r1')).toBe(false);
  });
});
