/**
 * The event stream's loop apart from HTTP: when it ends for the token's expiry. The relay
 * process tests (message-stream-expiry, message-stream-process) cover the route around it.
 */
import { EventEmitter } from 'node:events';
import type { PendingItem, PendingResponse } from '@svc/shared';
import { describe, expect, it } from 'vitest';
import { type EventSink, runMessageStream } from '../src/messages/message-stream.js';

const EMPTY: PendingResponse = { envelopes: [], more: false };

/** A sink that takes every write, or (`stalled`) none and never drains. */
function sink(stalled = false): EventSink & { written: string[] } {
  const emitter = new EventEmitter();
  const written: string[] = [];
  return {
    written,
    write: (chunk) => {
      written.push(chunk);
      return !stalled;
    },
    once: (event, listener) => emitter.once(event, listener),
    off: (event, listener) => emitter.off(event, listener),
  };
}

describe('a stream whose token expires', () => {
  it('waits no longer than the token lasts, then ends "expired" without reading again', async () => {
    let clock = 0;
    const waits: number[] = [];
    const abort = new AbortController();
    const end = await runMessageStream({
      sink: sink(),
      signal: abort.signal,
      expiresAt: 40_000,
      now: () => clock,
      timing: { keepaliveMs: 15_000, busRetryMs: 500 },
      active: async () => true,
      read: async (waitMs) => {
        waits.push(waitMs);
        // an idle inbox: the read waits its whole time (a loop that never ends is cut short)
        clock += waitMs;
        if (waits.length >= 10) abort.abort();
        return EMPTY;
      },
    });
    expect(end).toBe('expired');
    expect(waits).toEqual([15_000, 15_000, 10_000]);
  });

  it('a page read as the token expired is not written: its envelopes stay pending', async () => {
    let clock = 0;
    const out = sink();
    const item = { cursor: 1, message_id: 'm1' } as PendingItem;
    const abort = new AbortController();
    const end = await runMessageStream({
      sink: out,
      signal: abort.signal,
      expiresAt: 1_000,
      now: () => clock,
      active: async () => true,
      read: async () => {
        // the envelope arrived as the token ran out (a second read would be a loop that never ends)
        if (clock === 1_000) abort.abort();
        clock = 1_000;
        return { envelopes: [item], more: false };
      },
    });
    expect(end).toBe('expired');
    expect(out.written.join('')).not.toContain('event: envelope');
  });

  it('a reader that stopped reading does not hold the stream past the expiry', async () => {
    const abort = new AbortController();
    const item = { cursor: 1, message_id: 'm1' } as PendingItem;
    const result = runMessageStream({
      sink: sink(true),
      signal: abort.signal,
      // real time, shortly: the write waits for a drain that never comes
      expiresAt: Date.now() + 50,
      timing: { keepaliveMs: 600_000, busRetryMs: 500 },
      active: async () => true,
      read: async () => ({ envelopes: [item], more: false }),
    });
    const timeout = setTimeout(() => abort.abort(), 20_000);
    try {
      expect(await result).toBe('expired');
    } finally {
      clearTimeout(timeout);
    }
  });
});
