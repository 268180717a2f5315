/**
 * The webhook delivery worker. It polls the ledger queue (migration 005) for due rows,
 * so deliveries queued before a restart resume on their own, and runs each attempt:
 *
 * - 2xx: delivered.
 * - 5xx, 408, 429, timeout (5 s), connection or TLS failure, name not resolving:
 *   retried after 1 s, then after 2 s (3 attempts in all), then gave_up.
 * - any other answer (other 4xx, and 1xx/3xx: redirects are not followed): gave_up at
 *   once; the receiver said the request itself is wrong, and repeating it will not help.
 * - an address the policy refuses at delivery time: gave_up at once.
 * - endpoint removed, or envelope expired before the attempt: cancelled.
 * - the recipient muted the sender (the relay's mute list): cancelled before the first
 *   attempt; a mute means no notification.
 *
 * The first attempt always goes out, even when the agent's daemon has already
 * acknowledged the envelope (it usually has, within milliseconds): the endpoint gets
 * every inbound message. Only retries stop once the envelope is acknowledged. The
 * acknowledgement leaves the envelope's stream copy for that first attempt, and the
 * dispatcher removes the copy afterwards.
 *
 * Whatever happens, the envelope stays pending for pull delivery until acknowledged:
 * a webhook is a notification, never the only copy.
 */
import type { Logger } from 'pino';
import { WEBHOOK_TIMING } from '../config/config.js';
import type { Ledger } from '../ledger/ledger.js';
import type { RelationStore } from '../ledger/relations.js';
import type { DueDelivery, WebhookStore } from '../ledger/webhooks.js';
import type { Lookup } from './address-policy.js';
import { type PostOutcome, postWebhook } from './post.js';
import { deliveryBody, deliveryHeaders } from './signer.js';

/** Loads the stored envelope JSON by stream sequence; null when the stream no longer has it. */
export type EnvelopeLoader = (tenantId: string, streamSeq: number) => Promise<Uint8Array | null>;

export interface DispatcherOptions {
  /** only to tell whether the connection is still open */
  ledger: Ledger;
  store: WebhookStore;
  relations: RelationStore;
  logger: Logger;
  loadEnvelope: EnvelopeLoader;
  /** removes an acknowledged envelope's stream copy once its first attempt is done (best-effort) */
  deleteEnvelope?: (tenantId: string, streamSeq: number) => Promise<void>;
  allowPrivate: boolean;
  caPem?: string | undefined;
  lookup?: Lookup | undefined;
  now?: () => number;
  /** how often the queue is looked at; bounds how late an attempt starts */
  pollIntervalMs?: number;
  timeoutMs?: number;
  /** the waits before the 2nd, 3rd … attempt; its length + 1 is the number of attempts */
  retryDelaysMs?: readonly number[];
  /** attempts in flight at once */
  concurrency?: number;
}

/** Statuses that mean "try again later" although they are not 5xx. */
const RETRYABLE_4XX = new Set([408, 429]);

type Verdict =
  | { final: 'delivered' | 'gave_up' | 'cancelled'; status: number | null; error: string | null }
  | { retry: true; status: number | null; error: string | null }
  | { release: true };

function judge(outcome: PostOutcome): Verdict {
  switch (outcome.kind) {
    case 'answered': {
      const s = outcome.status;
      if (s >= 200 && s < 300) return { final: 'delivered', status: s, error: null };
      if (s >= 500 || RETRYABLE_4XX.has(s)) return { retry: true, status: s, error: `answered ${s}` };
      return { final: 'gave_up', status: s, error: `answered ${s} (not retried)` };
    }
    case 'timeout':
      return { retry: true, status: null, error: 'no answer within the timeout' };
    case 'network':
      return { retry: true, status: null, error: outcome.error };
    case 'refused':
      return { final: 'gave_up', status: null, error: `address refused: ${outcome.error}` };
    case 'aborted':
      return { release: true };
  }
}

export class WebhookDispatcher {
  readonly #store: WebhookStore;
  readonly #opts: DispatcherOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #poll: number;
  readonly #timeout: number;
  readonly #delays: readonly number[];
  readonly #concurrency: number;
  readonly #inflight = new Map<string, Promise<void>>();
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;

  constructor(opts: DispatcherOptions) {
    this.#opts = opts;
    this.#store = opts.store;
    this.#log = opts.logger;
    this.#now = opts.now ?? Date.now;
    this.#poll = opts.pollIntervalMs ?? 100;
    this.#timeout = opts.timeoutMs ?? WEBHOOK_TIMING.timeoutMs;
    this.#delays = opts.retryDelaysMs ?? WEBHOOK_TIMING.retryDelaysMs;
    this.#concurrency = opts.concurrency ?? 16;
  }

  get maxAttempts(): number {
    return this.#delays.length + 1;
  }

  /** Starts polling; due rows left by a previous run are picked up on the first look. */
  start(): void {
    if (!this.#stopped || this.#abort.signal.aborted) return;
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Stops polling and abandons attempts in flight (they are not counted and run again after a restart). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#abort.abort();
    await Promise.allSettled([...this.#inflight.values()]);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#tick(), ms);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    try {
      if (!this.#opts.ledger.isOpen) return;
      const room = this.#concurrency - this.#inflight.size;
      if (room > 0) {
        for (const row of await this.#store.due(this.#now(), room + this.#inflight.size)) {
          if (this.#inflight.size >= this.#concurrency) break;
          if (this.#inflight.has(row.id)) continue;
          const run = this.#attempt(row)
            .catch((err: Error) => this.#log.error({ event_id: row.id, err: err.message }, 'webhook attempt failed'))
            .finally(() => this.#inflight.delete(row.id));
          this.#inflight.set(row.id, run);
        }
      }
    } catch (err) {
      // The ledger cannot answer (closing, outage): /readyz reports it; look again later.
      this.#log.debug({ err: (err as Error).message }, 'webhook queue not readable');
    } finally {
      this.#schedule(this.#poll);
    }
  }

  /** Removes the stream copy of an acknowledged envelope that was kept for the first attempt. */
  async #tidy(row: DueDelivery): Promise<void> {
    await this.#opts
      .deleteEnvelope?.(row.tenant_id, row.stream_seq)
      .catch((err: Error) =>
        this.#log.debug({ err: err.message, seq: row.stream_seq }, 'could not delete acknowledged envelope'),
      );
  }

  async #attempt(row: DueDelivery): Promise<void> {
    const store = this.#store;
    const started = this.#now();
    if (row.acked_at !== null && row.attempts > 0) {
      await store.finish(row.id, 'cancelled', started, null, 'envelope acknowledged; no more retries');
      await this.#tidy(row);
      return;
    }
    if (
      row.attempts === 0 &&
      (await this.#opts.relations.has('mute', row.tenant_id, row.agent_id, row.sender_agent_id))
    ) {
      await store.finish(row.id, 'cancelled', started, null, 'the recipient muted the sender');
      if (row.acked_at !== null) await this.#tidy(row);
      return;
    }
    const target = await store.target(row.recipient_row);
    if (!target) {
      await store.finish(row.id, 'cancelled', started, null, 'the agent has no endpoint any more');
      return;
    }
    // Counted before the request: a relay killed now retries after the lease, within the limit.
    if (!(await store.claim(row.id, started, started + this.#timeout + (this.#delays[0] ?? 1000)))) return;
    const attempt = row.attempts + 1;
    const host = new URL(target.endpoint_url).host;

    let outcome: PostOutcome;
    try {
      const envelope = await this.#opts.loadEnvelope(row.tenant_id, row.stream_seq);
      if (envelope === null) {
        await store.finish(row.id, 'cancelled', this.#now(), null, 'envelope no longer in the stream', attempt);
        return;
      }
      const body = deliveryBody(
        { id: row.id, message_id: row.message_id, agent_id: row.agent_id, accepted_at: row.accepted_at },
        envelope,
      );
      outcome = await postWebhook({
        url: target.endpoint_url,
        body,
        headers: deliveryHeaders(target.webhook_secret, body, this.#now()),
        allowPrivate: this.#opts.allowPrivate,
        caPem: this.#opts.caPem,
        lookup: this.#opts.lookup,
        timeoutMs: this.#timeout,
        signal: this.#abort.signal,
      });
    } catch (err) {
      // the envelope could not be read (bus trouble): the relay's failure, retried like a network one
      outcome = this.#abort.signal.aborted
        ? { kind: 'aborted' }
        : { kind: 'network', error: `envelope store: ${(err as Error).message}` };
    }

    const verdict = judge(outcome);
    const now = this.#now();
    const log = { event_id: row.id, message_id: row.message_id, host, attempt };
    if ('release' in verdict) {
      if (this.#opts.ledger.isOpen) await store.release(row.id, now, attempt).catch(() => undefined);
      return;
    }
    // acknowledged meanwhile (or before): the first attempt went out; no retry, and the copy can go
    if (await store.acked(row.recipient_row, row.message_id)) {
      if ('retry' in verdict) {
        await store.finish(
          row.id,
          'cancelled',
          now,
          verdict.status,
          `${verdict.error}; envelope acknowledged, not retried`,
          attempt,
        );
        this.#log.info(
          { ...log, status: verdict.status, error: verdict.error },
          'webhook attempt failed; acknowledged, not retried',
        );
      }
      await this.#tidy(row);
      if ('retry' in verdict) return;
    }
    if ('final' in verdict) {
      await store.finish(row.id, verdict.final, now, verdict.status, verdict.error, attempt);
      if (verdict.final === 'delivered') this.#log.info({ ...log, status: verdict.status }, 'webhook delivered');
      else
        this.#log.warn(
          { ...log, status: verdict.status, error: verdict.error },
          'webhook not delivered; left for pull',
        );
      return;
    }
    const delay = this.#delays[attempt - 1];
    if (delay === undefined) {
      await store.finish(row.id, 'gave_up', now, verdict.status, verdict.error, attempt);
      this.#log.warn(
        { ...log, status: verdict.status, error: verdict.error },
        'webhook attempts exhausted; left for pull',
      );
      return;
    }
    await store.retryAt(row.id, now + delay, now, verdict.status, verdict.error, attempt);
    this.#log.info(
      { ...log, status: verdict.status, error: verdict.error, retry_in_ms: delay },
      'webhook attempt failed',
    );
  }
}
