/**
 * The loop behind GET /api/v1/messages/stream, apart from HTTP: read a page of pending
 * envelopes, write each as a server-sent event, write a keepalive comment when a read
 * waited in vain. A write the connection does not take at once (write() answers false) is
 * waited for ('drain') before anything more is written or read, so a reader that stops
 * reading holds about one page in the relay's memory instead of the whole inbox once per
 * stream. Once per keepalive interval, stalled or not, it asks the ledger whether the
 * agent is still active: a revoked agent's stream ends on every relay instance sharing
 * that ledger, not only on the one that took the revocation. A recheck request (a
 * revocation on this instance, or one another instance announced) makes that check at once,
 * cutting short the wait it is in. It also ends when the access token it was opened with
 * expires: a stream is a request, and no request outlives its token (the client connects
 * again with a fresh one, resuming from its last cursor).
 */
import { type PendingItem, type PendingResponse, SvcError } from '@svc/shared';

/** The connection's writable side: an http.ServerResponse. */
export interface EventSink {
  write(chunk: string): boolean;
  once(event: 'drain', listener: () => void): unknown;
  off(event: 'drain', listener: () => void): unknown;
}

export interface MessageStreamTiming {
  /** A comment line this often keeps proxies from closing an idle stream; also the agent check's period. */
  keepaliveMs: number;
  /** How long to wait before reading again while the bus is unavailable. */
  busRetryMs: number;
}

export const MESSAGE_STREAM_TIMING: MessageStreamTiming = { keepaliveMs: 15_000, busRetryMs: 500 };

export interface MessageStreamOptions {
  sink: EventSink;
  /** The next page after what was sent, waiting up to `waitMs` for its first envelope. */
  read(waitMs: number, signal: AbortSignal): Promise<PendingResponse>;
  /** False once the agent is revoked or enrolled again (the check a request's authentication makes). */
  active(): Promise<boolean>;
  /** Aborted when the connection closes or the relay shuts down. */
  signal: AbortSignal;
  /** Dispatches 'recheck' when the agent may have been revoked: the ledger is asked at once. */
  rechecks?: EventTarget;
  /** When the access token the stream was opened with expires (ms, on the `now` clock); the stream ends then. */
  expiresAt?: number;
  /** Told of each read the bus could not answer (the stream stays open and reads again). */
  onBusUnavailable?(err: SvcError): void;
  timing?: MessageStreamTiming;
  now?: () => number;
}

/**
 * Why the loop ended: the connection went (or the relay shuts down), the agent may no
 * longer read, or the token it was opened with expired.
 */
export type MessageStreamEnd = 'closed' | 'revoked' | 'expired';

export const KEEPALIVE = ': keepalive\n\n';

export const envelopeEvent = (item: PendingItem): string =>
  `id: ${item.cursor}\nevent: envelope\ndata: ${JSON.stringify(item)}\n\n`;

const abortableDelay = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

/** True once the sink drained; false when `ms` passed or the signal aborted first. */
function drained(sink: EventSink, signal: AbortSignal, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const finish = (value: boolean) => {
      clearTimeout(timer);
      sink.off('drain', onDrain);
      signal.removeEventListener('abort', onAbort);
      resolve(value);
    };
    const onDrain = () => finish(true);
    const onAbort = () => finish(false);
    const timer = setTimeout(() => finish(false), ms);
    sink.once('drain', onDrain);
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
  });
}

export async function runMessageStream(o: MessageStreamOptions): Promise<MessageStreamEnd> {
  const { sink, signal } = o;
  const { keepaliveMs, busRetryMs } = o.timing ?? MESSAGE_STREAM_TIMING;
  const now = o.now ?? Date.now;
  const expiresAt = o.expiresAt ?? Number.POSITIVE_INFINITY;
  // the first look is at once: a revocation between the request's own check and this
  // stream's slot found no stream to recheck
  let checkedAt = Number.NEGATIVE_INFINITY;
  /** A recheck was asked for and no look at the ledger has begun since. */
  let recheck = false;
  const untilExpiry = () => Math.max(0, expiresAt - now());
  const untilCheck = () => (recheck ? 0 : Math.min(Math.max(0, checkedAt + keepaliveMs - now()), untilExpiry()));
  /** The token's expiry at once; the ledger at most once per keepalive interval, or when asked to. */
  const ended = async (): Promise<MessageStreamEnd | undefined> => {
    if (untilExpiry() === 0) return 'expired';
    if (untilCheck() > 0) return undefined;
    // a recheck asked for while the ledger answered may concern a revocation the answer missed
    do {
      recheck = false;
      checkedAt = now();
      if (!(await o.active())) return 'revoked';
    } while (recheck);
    return undefined;
  };

  /** The wait under way (a read, a drain): a recheck request cuts it short. */
  let wait: AbortController | undefined;
  const waiting = async <T>(fn: (waitSignal: AbortSignal) => Promise<T>): Promise<T> => {
    const c = new AbortController();
    wait = c;
    const onEnd = () => c.abort();
    signal.addEventListener('abort', onEnd, { once: true });
    // asked for before this wait began (while the ledger was asked, or a page written)
    if (signal.aborted || recheck) c.abort();
    try {
      return await fn(c.signal);
    } finally {
      signal.removeEventListener('abort', onEnd);
      wait = undefined;
    }
  };
  const onRecheck = () => {
    recheck = true;
    wait?.abort();
  };

  /** Writes `chunk`; if the connection has not taken it, waits until it has (checking the agent meanwhile). */
  const write = async (chunk: string): Promise<MessageStreamEnd | undefined> => {
    if (sink.write(chunk)) return undefined;
    while (!(await waiting((w) => drained(sink, w, untilCheck())))) {
      if (signal.aborted) return 'closed';
      const end = await ended();
      if (end) return end;
    }
    return undefined;
  };

  const loop = async (): Promise<MessageStreamEnd> => {
    while (!signal.aborted) {
      const end = await ended();
      if (end) return end;
      let page: PendingResponse;
      try {
        // a read waits no longer than the token lasts: an expired stream ends on time even when idle
        page = await waiting((w) => o.read(Math.min(keepaliveMs, untilExpiry()), w));
      } catch (err) {
        // NATS failing over (a node lost, a stream leader re-elected): the stream stays
        // open and reads again shortly instead of making every client reconnect
        if (!(err instanceof SvcError && err.code === 'bus_unavailable')) throw err;
        o.onBusUnavailable?.(err);
        const end = await write(KEEPALIVE);
        if (end) return end;
        await abortableDelay(busRetryMs, signal);
        continue;
      }
      if (signal.aborted) break;
      // a read woken by the token's expiry or a recheck: what it read stays pending if the stream ends
      const after = await ended();
      if (after) return after;
      if (page.envelopes.length === 0) {
        const end = await write(KEEPALIVE);
        if (end) return end;
        continue;
      }
      for (const item of page.envelopes) {
        const end = await write(envelopeEvent(item));
        if (end) return end;
      }
    }
    return 'closed';
  };

  o.rechecks?.addEventListener('recheck', onRecheck);
  try {
    return await loop();
  } finally {
    o.rechecks?.removeEventListener('recheck', onRecheck);
  }
}
