import { EventEmitter } from 'node:events';
import { type PendingItem, type PendingResponse, SvcError } from '@svc/shared';
import { describe, expect, it } from 'vitest';
import { KEEPALIVE, type MessageStreamOptions, runMessageStream } from './message-stream.js';

/** A connection whose every write is "not taken yet" until the test says it drained. */
class StalledSink extends EventEmitter {
  readonly chunks: string[] = [];
  /** what write() answers: false = the connection's buffer is full */
  taken = false;

  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return this.taken;
  }

  drain(): void {
    this.emit('drain');
  }

  envelopes(): number[] {
    return this.chunks.flatMap((c) => {
      const id = /^id: (\d+)$/m.exec(c)?.[1];
      return id === undefined ? [] : [Number(id)];
    });
  }
}

const item = (cursor: number): PendingItem =>
  ({
    cursor,
    message_id: `m${cursor}`,
    sender: 'alice',
    accepted_at: new Date(0).toISOString(),
    envelope: { body: 'x'.repeat(64) },
  }) as unknown as PendingItem;

/** Lets every pending promise callback and I/O callback run (no clock involved). */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

/** A long-poll that waits `waitMs` in vain, as the inbox does when nothing comes. */
const idle = (waitMs: number, signal: AbortSignal): Promise<PendingResponse> =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve({ envelopes: [], more: false });
    };
    const timer = setTimeout(done, waitMs);
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * A reader of `count` pages of `size` envelopes, then of none (a long-poll); counts the
 * reads. Finite: a stream whose every write is taken would otherwise loop on promises alone.
 */
function pages(size: number, count = 10) {
  let next = 1;
  const reader = {
    reads: 0,
    read: async (waitMs: number, signal: AbortSignal): Promise<PendingResponse> => {
      reader.reads++;
      if (reader.reads > count) return idle(waitMs, signal);
      const envelopes = Array.from({ length: size }, () => item(next++));
      return { envelopes, more: true };
    },
  };
  return reader;
}

/** An agent the ledger keeps finding active; counts the looks. */
function stillActive() {
  const agent = {
    checks: 0,
    active: async () => {
      agent.checks++;
      return true;
    },
  };
  return agent;
}

function start(o: Partial<MessageStreamOptions> & Pick<MessageStreamOptions, 'sink' | 'read'>) {
  const abort = new AbortController();
  const ended = runMessageStream({
    active: async () => true,
    signal: abort.signal,
    timing: { keepaliveMs: 60_000, busRetryMs: 10 },
    ...o,
  });
  return { abort, ended };
}

describe('runMessageStream: backpressure', () => {
  it('writes nothing more and reads no further page until the connection took the last write', async () => {
    const sink = new StalledSink();
    const reader = pages(3);
    const { abort, ended } = start({ sink, read: reader.read });
    await settle();
    // the first envelope was not taken: no second envelope, no second page
    expect(sink.envelopes()).toEqual([1]);
    expect(reader.reads).toBe(1);
    sink.drain();
    await settle();
    expect(sink.envelopes()).toEqual([1, 2]);
    sink.drain();
    await settle();
    expect(sink.envelopes()).toEqual([1, 2, 3]);
    expect(reader.reads).toBe(1);
    // the page is out: only now the next one is read
    sink.drain();
    await settle();
    expect(reader.reads).toBe(2);
    expect(sink.envelopes()).toEqual([1, 2, 3, 4]);
    abort.abort();
    await expect(ended).resolves.toBe('closed');
  });

  it('a keepalive the connection does not take holds the next read too', async () => {
    const sink = new StalledSink();
    let reads = 0;
    const { abort, ended } = start({
      sink,
      read: async () => {
        reads++;
        return { envelopes: [], more: false };
      },
    });
    await settle();
    expect(sink.chunks).toEqual([KEEPALIVE]);
    expect(reads).toBe(1);
    sink.drain();
    await settle();
    expect(reads).toBe(2);
    abort.abort();
    await expect(ended).resolves.toBe('closed');
  });

  it('a connection that takes every write is read page after page', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    const reader = pages(2, 3);
    const { abort, ended } = start({ sink, read: reader.read });
    await settle();
    // three pages, then the long-poll for a fourth
    expect(reader.reads).toBe(4);
    expect(sink.envelopes()).toEqual([1, 2, 3, 4, 5, 6]);
    abort.abort();
    await expect(ended).resolves.toBe('closed');
  });

  it('a connection that closes while stalled ends the stream, leaving no listener behind', async () => {
    const sink = new StalledSink();
    const { abort, ended } = start({ sink, read: pages(5).read });
    await settle();
    expect(sink.listenerCount('drain')).toBe(1);
    abort.abort();
    await expect(ended).resolves.toBe('closed');
    expect(sink.listenerCount('drain')).toBe(0);
    expect(sink.envelopes()).toEqual([1]);
  });
});

describe('runMessageStream: the agent check', () => {
  it('ends the stream once the agent is no longer active, at a keepalive', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    let active = true;
    let checks = 0;
    const { ended } = start({
      sink,
      read: idle,
      active: async () => {
        checks++;
        return active;
      },
      timing: { keepaliveMs: 5, busRetryMs: 10 },
    });
    while (checks < 2) await new Promise((r) => setTimeout(r, 5));
    active = false;
    await expect(ended).resolves.toBe('revoked');
    expect(sink.chunks).toContain(KEEPALIVE);
  });

  it('checks a stalled stream too, and ends it', async () => {
    const sink = new StalledSink();
    let checks = 0;
    const { ended } = start({
      sink,
      read: pages(5).read,
      active: async () => ++checks < 3,
      timing: { keepaliveMs: 5, busRetryMs: 10 },
    });
    await expect(ended).resolves.toBe('revoked');
    // never drained: one envelope written, then only the checks ran
    expect(sink.envelopes()).toEqual([1]);
    expect(checks).toBe(3);
    expect(sink.listenerCount('drain')).toBe(0);
  });

  it('asks once as it opens, then at most once per keepalive interval, however many pages come', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    const agent = stillActive();
    const reader = pages(1);
    const { abort, ended } = start({ sink, read: reader.read, active: agent.active });
    await settle();
    abort.abort();
    await ended;
    expect(reader.reads).toBe(11);
    expect(agent.checks).toBe(1);
  });
});

describe('runMessageStream: errors', () => {
  it('a bus outage writes a keepalive and reads again; another failure ends the loop', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    let reads = 0;
    const outages: string[] = [];
    const { ended } = start({
      sink,
      read: async () => {
        reads++;
        if (reads === 1) throw new SvcError('bus_unavailable', 'leader lost');
        throw new SvcError('ledger_closed');
      },
      onBusUnavailable: (err) => outages.push(err.message),
    });
    await expect(ended).rejects.toMatchObject({ code: 'ledger_closed' });
    expect(outages).toEqual(['leader lost']);
    expect(sink.chunks).toEqual([KEEPALIVE]);
  });
});

describe('runMessageStream: a recheck request', () => {
  it("cuts an idle read short and ends a revoked agent's stream at once", async () => {
    const sink = new StalledSink();
    sink.taken = true;
    const rechecks = new EventTarget();
    let active = true;
    // the keepalive (and so the periodic check) is a minute away
    const { ended } = start({ sink, read: idle, active: async () => active, rechecks });
    await settle();
    active = false;
    rechecks.dispatchEvent(new Event('recheck'));
    await expect(ended).resolves.toBe('revoked');
  });

  it('ends a stalled stream too, and leaves no listener behind', async () => {
    const sink = new StalledSink();
    const rechecks = new EventTarget();
    let active = true;
    const { ended } = start({ sink, read: pages(5).read, active: async () => active, rechecks });
    await settle();
    expect(sink.envelopes()).toEqual([1]);
    active = false;
    rechecks.dispatchEvent(new Event('recheck'));
    await expect(ended).resolves.toBe('revoked');
    expect(sink.listenerCount('drain')).toBe(0);
  });

  it('for an agent still active: one more look at the ledger, and the stream goes on', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    const rechecks = new EventTarget();
    const agent = stillActive();
    const reader = pages(1, 1);
    const { abort, ended } = start({ sink, read: reader.read, active: agent.active, rechecks });
    await settle();
    expect(agent.checks).toBe(1); // as it opened
    rechecks.dispatchEvent(new Event('recheck'));
    await settle();
    expect(agent.checks).toBe(2);
    // the read it cut short is made again, and what comes is still written
    expect(reader.reads).toBe(3);
    abort.abort();
    await expect(ended).resolves.toBe('closed');
    expect(sink.envelopes()).toEqual([1]);
  });

  it('asked for while the ledger answers: asked again, and a revocation the answer missed ends it unread', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    const rechecks = new EventTarget();
    const answers: Array<(active: boolean) => void> = [];
    const reader = pages(1);
    const { ended } = start({
      sink,
      read: reader.read,
      active: () => new Promise<boolean>((resolve) => answers.push(resolve)),
      rechecks,
    });
    await settle();
    expect(answers).toHaveLength(1);
    // the revocation lands while the first look is under way, which answers from before it
    rechecks.dispatchEvent(new Event('recheck'));
    answers[0]?.(true);
    await settle();
    expect(answers).toHaveLength(2);
    answers[1]?.(false);
    await expect(ended).resolves.toBe('revoked');
    expect(reader.reads).toBe(0);
    expect(sink.envelopes()).toEqual([]);
  });
});

describe('runMessageStream: the first look', () => {
  it('is made as the stream opens: an agent revoked just before reads nothing', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    const reader = pages(1);
    const { ended } = start({ sink, read: reader.read, active: async () => false });
    await expect(ended).resolves.toBe('revoked');
    expect(reader.reads).toBe(0);
  });
});

describe('runMessageStream: the token expiry', () => {
  /** A clock the reads move on: each waits its whole time (an idle inbox). */
  function idleClock() {
    const clock = { now: 0, waits: [] as number[] };
    const read = async (waitMs: number): Promise<PendingResponse> => {
      clock.waits.push(waitMs);
      clock.now += waitMs;
      return { envelopes: [], more: false };
    };
    return { clock, read };
  }

  it('a read waits no longer than the token lasts; the stream then ends "expired"', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    const { clock, read } = idleClock();
    const { abort, ended } = start({
      sink,
      read: async (waitMs) => {
        // a loop that never ends is cut short (it would otherwise run on promises alone)
        if (clock.waits.length >= 10) abort.abort();
        return read(waitMs);
      },
      expiresAt: 40_000,
      now: () => clock.now,
      timing: { keepaliveMs: 15_000, busRetryMs: 10 },
    });
    await expect(ended).resolves.toBe('expired');
    expect(clock.waits).toEqual([15_000, 15_000, 10_000]);
  });

  it('a page read as the token expired is not written: its envelopes stay pending', async () => {
    const sink = new StalledSink();
    sink.taken = true;
    let now = 0;
    const reader = pages(1);
    const { ended } = start({
      sink,
      read: async (waitMs, signal) => {
        now = 1_000;
        return reader.read(waitMs, signal);
      },
      expiresAt: 1_000,
      now: () => now,
    });
    await expect(ended).resolves.toBe('expired');
    expect(sink.envelopes()).toEqual([]);
  });

  it('a reader that stopped reading does not hold the stream past the expiry', async () => {
    const sink = new StalledSink();
    // real time, shortly: the write waits for a drain that never comes, the keepalive is a minute away
    const { ended } = start({ sink, read: pages(5).read, expiresAt: Date.now() + 50 });
    await expect(ended).resolves.toBe('expired');
    expect(sink.envelopes()).toEqual([1]);
    expect(sink.listenerCount('drain')).toBe(0);
  });
});
