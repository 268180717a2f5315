/**
 * One agent's live session with its relay: credentials, the SSE message stream with
 * resume (Last-Event-ID = the archived cursor), reconnect with backoff, and the ack that
 * follows archiving (so an outage never loses a message, and the idempotent archive
 * insert means a redelivery never duplicates one).
 */
import { setMaxListeners } from 'node:events';
import {
  AGENT_NUMBER_PATTERN,
  type IdentityKeys,
  isMessageId,
  type MutedList,
  type PendingResponse,
  type ReceiptsResponse,
  SENT_AT_PATTERN,
} from '@svc/shared';
import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/store.js';
import type { Archive } from '../archive/archive.js';
import type { SyncResult } from '../client/api.js';
import type { SessionTiming } from '../config/config.js';
import { DaemonError, RelayError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { EdgeLink, SourceFeed } from '../local-stack/edge-link.js';
import { isTransient, postEnvelope } from '../messaging/send.js';
import { relayCode } from '../relay/http.js';
import { loadKeys, type Vault } from '../vault/index.js';
import { type AgentRelay, agentRelay } from './agent-relay.js';
import type { Credentials } from './credentials.js';
import { type InboundItem, type InboundOutcome, InboundProcessor } from './inbound.js';
import { Peers } from './peers.js';
import { readSse } from './sse.js';

/**
 * `refused`: the relay refuses the agent's own identity key (it was most likely revoked);
 * the session asks again only now and then, and the outbox holds its messages.
 */
export type SessionState = 'connected' | 'connecting' | 'offline' | 'refused';
/** Where the session takes its messages from: the relay's HTTP stream, or its named source on the hub. */
export type ReceivePath = { via: 'relay-stream' } | { via: 'source'; durable: string };
export const STREAM_CURSOR = 'stream';
export const RECEIPTS_CURSOR = 'receipts';
/** Sent messages older than this no longer make the session ask for receipts. */
const RECEIPTS_HORIZON_MS = 7 * 24 * 3600 * 1000;
/** Pages of 100 pending envelopes one sync reads at most. */
const SYNC_PAGES_PER_CALL = 100;
/** Pages of 100 receipts one fetchReceipts reads at most. */
const RECEIPT_PAGES_PER_CALL = 50;
/** Receipts of messages not archived here that the archive keeps (Archive.pruneStrayReceipts). */
const STRAY_RECEIPTS_KEPT = 10_000;
/**
 * A refused agent asks again after `refusedRetryMinMs` (30 s; a refusal that passes: a
 * challenge that expired on the way), then less and less often, up to every 15 min: a revoked
 * agent retrying at the reconnect pace would spend its machine's sign-in allowance at the relay.
 */
const REFUSED_RETRY_MAX_MS = 15 * 60_000;
/**
 * A stream the relay ended for its token's expiry is opened again at once, with a fresh token
 * and without showing the session as connecting (it happens every 15 minutes); a second one in
 * a row that lasted less than this goes through the usual backoff instead (no tight loop).
 */
const QUIET_RENEWAL_MIN_MS = 10_000;
/** The largest cursor a relay takes back (Last-Event-ID, `since`, `after`: at most 15 digits). */
const MAX_RELAY_CURSOR = 999_999_999_999_999;

/**
 * `value` when it is a cursor the relay could take back, else undefined. What the relay
 * says is kept only then: a made-up one (text, negative, fractional, too long) would be
 * sent back at every later connect and refused every time, by an honest relay too.
 */
export function relayCursor(value: unknown): number | undefined {
  return Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= MAX_RELAY_CURSOR
    ? (value as number)
    : undefined;
}

type Receipt = ReceiptsResponse['receipts'][number];

/**
 * A receipt that names a message id, an agent number and a time: the only ones kept. The
 * relay's word, and the archive keeps what it says: anything else (of any size) is not a
 * receipt of this daemon's messages.
 */
function isReceipt(r: unknown): r is Receipt {
  const x = r as Partial<Record<keyof Receipt, unknown>> | null;
  return (
    typeof x === 'object' &&
    x !== null &&
    isMessageId(x.message_id) &&
    typeof x.recipient === 'string' &&
    AGENT_NUMBER_PATTERN.test(x.recipient) &&
    typeof x.acked_at === 'string' &&
    SENT_AT_PATTERN.test(x.acked_at) &&
    Number.isFinite(Date.parse(x.acked_at))
  );
}

export interface SessionOptions extends SessionTiming {
  config: AgentConfig;
  archive: Archive;
  vault: Vault;
  events: EventBus;
  log: Logger;
  ca?: string;
  /** called when the config changes (rotation) so it is persisted */
  saveConfig: (c: AgentConfig) => void;
  /** another agent of this daemon with that number, in the same deployment and tenant */
  localPeer?: (agentNumber: string) => AgentSession | undefined;
  /** the local nats-server's link, while `svc start` runs it */
  edge?: () => EdgeLink | undefined;
}

export class AgentSession {
  config: AgentConfig;
  readonly archive: Archive;
  readonly vault: Vault;
  readonly events: EventBus;
  readonly log: Logger;
  readonly credentials: Credentials;
  readonly relay: AgentRelay;
  readonly peers: Peers;
  readonly inbound: InboundProcessor;
  readonly #opts: SessionOptions;
  readonly #keys = new Map<number, IdentityKeys>();
  #state: SessionState = 'offline';
  #lastError: string | undefined;
  readonly #life = new AbortController();
  #abort?: AbortController;
  /** the receive loop's own: switching between the HTTP stream and a named source ends only it */
  #receiveAbort?: AbortController;
  #feed: SourceFeed | undefined;
  #loop?: Promise<void>;
  #receiptsLoop?: Promise<void>;
  #outboxLoop?: Promise<void>;
  #heartbeatLoop?: Promise<void>;
  #wake?: () => void;
  #wakeOutbox?: () => void;
  /** Outbound messages archived as queued while their first post is in flight (send.ts): the outbox leaves them. */
  readonly sending = new Set<string>();
  #wakeHeartbeat?: () => void;
  /** agent numbers this agent muted (the relay's mute list, read on connect and after a change) */
  #muted = new Set<string>();
  /** relay acks that failed (network): retried on the next connection */
  readonly #unacked = new Set<string>();

  constructor(opts: SessionOptions) {
    this.#opts = opts;
    this.config = opts.config;
    this.archive = opts.archive;
    this.vault = opts.vault;
    this.events = opts.events;
    this.log = opts.log;
    // stop() aborts every relay call of this agent still in flight: each adds a listener to
    // this one signal while it runs (and so does each waiting check), any number at once
    setMaxListeners(0, this.#life.signal);
    ({ credentials: this.credentials, relay: this.relay } = agentRelay(() => this.config, {
      ca: opts.ca,
      vault: opts.vault,
      log: opts.log,
      stopped: this.#life.signal,
    }));
    this.peers = new Peers(() => this.config, opts.archive, this.relay, opts.events, opts.log);
    this.inbound = new InboundProcessor({
      agent: () => this.config,
      archive: opts.archive,
      peers: this.peers,
      events: opts.events,
      keys: (r) => this.keys(r),
      log: opts.log,
      isMuted: (sender) => this.#muted.has(sender),
    });
  }

  get name(): string {
    return this.config.name;
  }

  get state(): SessionState {
    return this.#state;
  }

  /** Derived keys, cached in memory (the seed stays in the vault). */
  keys(rotation = this.config.rotation): IdentityKeys {
    let k = this.#keys.get(rotation);
    if (!k) {
      k = loadKeys(this.vault, this.name, rotation);
      this.#keys.set(rotation, k);
    }
    return k;
  }

  updateConfig(c: AgentConfig): void {
    this.config = c;
    this.#opts.saveConfig(c);
  }

  /** Why the last attempt to connect failed, while the session is not connected (status, doctor). */
  get lastError(): string | undefined {
    return this.#state === 'connected' ? undefined : this.#lastError;
  }

  /** Why the session was not started (a locked vault): shown as its session error while it stays offline. */
  notStarted(message: string): void {
    this.#noteError(message);
  }

  /** Why connecting failed; a new reason is news for the pages and status lines, as a state change is. */
  #noteError(message: string): void {
    if (message === this.#lastError) return;
    this.#lastError = message;
    if (this.#state !== 'connected') {
      this.events.emit({ type: 'session', agent: this.name, state: this.#state, error: message });
    }
  }

  /**
   * Whether the session is receiving (connected) within `ms`: false at the deadline, or as soon
   * as the relay refuses it, or for an identity with no relay session. What registering waits for.
   */
  whenReceiving(ms: number): Promise<boolean> {
    if (this.#state === 'connected') return Promise.resolve(true);
    if (this.#state === 'refused' || !this.#loop) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.#stateWaiters.delete(waiter);
        resolve(ok);
      };
      const waiter = (state: SessionState) => {
        if (state === 'connected' || state === 'refused') done(state === 'connected');
      };
      const timer = setTimeout(() => done(false), ms);
      timer.unref();
      this.#stateWaiters.add(waiter);
    });
  }

  #stateWaiters = new Set<(state: SessionState) => void>();

  #setState(state: SessionState): void {
    if (state === 'connected') this.#lastError = undefined;
    if (state === this.#state) return;
    this.#state = state;
    for (const w of [...this.#stateWaiters]) w(state);
    this.log.info({ agent: this.name, state }, 'session state');
    this.events.emit({
      type: 'session',
      agent: this.name,
      state,
      ...(this.lastError ? { error: this.lastError } : {}),
    });
    if (state === 'connected') {
      // the relay answers again: send what waited, and say we are here
      this.#wakeOutbox?.();
      this.#wakeHeartbeat?.();
    }
  }

  start(): void {
    if (this.#loop) return;
    // A dedicated nats-relay identity (a machine's leaf uplink) has no agent route on the
    // relay: it gets no stream, outbox or heartbeat, only its uplink calls (local-stack/uplink.ts).
    if (!this.config.capabilities.includes('http-relay')) {
      this.log.info({ agent: this.name }, 'no http-relay capability: no relay session (a leaf uplink or local agent)');
      return;
    }
    this.#abort = new AbortController();
    this.#startReceiving();
    this.#receiptsLoop = this.#pollReceipts(this.#abort.signal);
    this.#outboxLoop = this.#runOutbox(this.#abort.signal);
    this.#heartbeatLoop = this.#heartbeat(this.#abort.signal);
  }

  #startReceiving(): void {
    const ac = new AbortController();
    this.#receiveAbort = ac;
    const feed = this.#feed;
    this.#loop = feed ? this.#runSource(feed, ac.signal) : this.#run(ac.signal);
  }

  get receivePath(): ReceivePath {
    return this.#feed ? { via: 'source', durable: this.#feed.durable } : { via: 'relay-stream' };
  }

  /**
   * Receives through `feed` (a named source across the leaf uplink) instead of the relay's
   * HTTP stream, or back through the stream when `feed` is undefined. The running receive
   * loop ends first, so the two never run at once.
   */
  async receiveThrough(feed: SourceFeed | undefined): Promise<void> {
    this.#feed = feed;
    if (!this.#loop || this.#life.signal.aborted) return;
    this.#receiveAbort?.abort();
    this.#wake?.();
    await this.#loop;
    if (this.#life.signal.aborted) return;
    this.log.info(
      { agent: this.name, ...(feed ? { via: 'source', durable: feed.durable } : { via: 'relay-stream' }) },
      'receive path',
    );
    this.#startReceiving();
  }

  /** Another agent of this machine (same deployment and tenant) by number, if there is one. */
  localPeer(agentNumber: string): AgentSession | undefined {
    return this.#opts.localPeer?.(agentNumber);
  }

  /** The local nats-server's link (local delivery), if the local stack runs. */
  edge(): EdgeLink | undefined {
    return this.#opts.edge?.();
  }

  /** A message was queued: try the outbox now. */
  wakeOutbox(): void {
    this.#wakeOutbox?.();
  }

  /** aborted when the session stops (waiting `check` calls return) */
  get stopped(): AbortSignal {
    return this.#life.signal;
  }

  async stop(): Promise<void> {
    this.#life.abort();
    this.#abort?.abort();
    this.#receiveAbort?.abort();
    this.#wake?.();
    await Promise.all([this.#loop, this.#receiptsLoop, this.#outboxLoop, this.#heartbeatLoop]);
    this.#loop = undefined;
    this.#receiptsLoop = undefined;
    this.#outboxLoop = undefined;
    this.#heartbeatLoop = undefined;
    this.#setState('offline');
  }

  /** Processes one delivered envelope and acks it on the relay unless it must come again. */
  async handle(item: InboundItem): Promise<InboundOutcome> {
    const outcome = await this.inbound.process(item);
    await this.ackRelay(item.message_id);
    return outcome;
  }

  /** Relay ack (delivery): idempotent; an unknown message is already gone. */
  async ackRelay(messageId: string): Promise<void> {
    try {
      await this.relay.call({
        method: 'POST',
        path: `/api/v1/messages/${encodeURIComponent(messageId)}/ack`,
        timeoutMs: 15_000,
      });
      this.#unacked.delete(messageId);
    } catch (err) {
      if (relayCode(err) === 'unknown_message') {
        this.#unacked.delete(messageId);
        return;
      }
      this.#unacked.add(messageId);
      this.log.warn(
        { agent: this.name, message_id: messageId, err: (err as Error).message },
        'relay ack failed; will retry',
      );
    }
  }

  async #flushAcks(): Promise<void> {
    for (const id of [...this.#unacked]) await this.ackRelay(id);
  }

  /** Sleeps `ms` or until the signal aborts; `onWake` receives the function that ends it early. */
  #sleep(ms: number, signal: AbortSignal, onWake?: (wake: () => void) => void): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
      onWake?.(done);
    });
  }

  /**
   * Posts the queued envelopes, oldest first, each exactly as it was sealed (same message
   * id, so a post the relay already had comes back `duplicate`, never doubled). Stops at
   * the first transient failure; a refusal marks that message failed. Returns whether the
   * outbox is empty now.
   */
  async flushOutbox(): Promise<boolean> {
    for (;;) {
      // a message being posted by its send right now is that send's to settle
      const batch = this.archive.outbox(50).filter((e) => !this.sending.has(e.message_id));
      if (batch.length === 0) return true;
      for (const entry of batch) {
        try {
          const status = await postEnvelope(this, JSON.parse(entry.envelope));
          this.archive.settleQueued(entry.message_id, 'sent');
          this.log.info({ agent: this.name, message_id: entry.message_id, status }, 'queued message sent');
          this.events.emit({ type: 'outbox', agent: this.name, message_id: entry.message_id, state: 'sent' });
        } catch (err) {
          // only the relay's own refusal is final; anything else (network, 5xx, a locked vault)
          // waits, and so does a refused sign-in: the agent's, not this message's (the session
          // shows it refused)
          if (!(err instanceof RelayError) || isTransient(err) || relayCode(err) === 'invalid_sign_in') return false;
          const error = `${err.relayErrorCode}: ${err.message}`;
          this.archive.settleQueued(entry.message_id, 'failed', error);
          this.log.warn({ agent: this.name, message_id: entry.message_id, error }, 'queued message refused');
          this.events.emit({ type: 'outbox', agent: this.name, message_id: entry.message_id, state: 'failed', error });
        }
      }
    }
  }

  /** Sends the outbox whenever there is something in it, with backoff while the relay does not answer. */
  async #runOutbox(signal: AbortSignal): Promise<void> {
    const { outboxRetryMinMs: min, outboxRetryMaxMs: max } = this.#opts;
    let attempt = 0;
    while (!signal.aborted) {
      let empty = false;
      try {
        // a refused agent cannot send: its messages wait (each try would be a refused sign-in)
        if (this.#state !== 'refused') empty = await this.flushOutbox();
      } catch (err) {
        this.log.warn({ agent: this.name, err: (err as Error).message }, 'outbox flush failed');
      }
      if (signal.aborted) break;
      if (empty) attempt = 0;
      // empty: wait for a new queued message; else back off (a reconnect wakes it early)
      const delay = empty ? 3_600_000 : Math.min(max, min * 2 ** attempt++);
      await this.#sleep(delay, signal, (wake) => {
        this.#wakeOutbox = wake;
      });
    }
  }

  /** While connected, a heartbeat every `heartbeatMs` so the relay shows the agent online. */
  async #heartbeat(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (this.#state === 'connected') {
        try {
          await this.relay.call({ method: 'POST', path: '/api/v1/agents/me/heartbeat', body: {}, timeoutMs: 15_000 });
        } catch (err) {
          this.log.debug({ agent: this.name, err: (err as Error).message }, 'heartbeat failed');
        }
      }
      if (signal.aborted) break;
      await this.#sleep(this.#opts.heartbeatMs, signal, (wake) => {
        this.#wakeHeartbeat = wake;
      });
    }
  }

  /** Reads the relay's mute list (after connecting, and after `abuse mute`/`unmute`). */
  async refreshMutes(): Promise<void> {
    try {
      await this.#readMutes();
    } catch (err) {
      this.log.warn(
        { agent: this.name, err: (err as Error).message },
        'could not read the mute list; keeping the last one',
      );
    }
  }

  async #readMutes(): Promise<void> {
    const list = await this.relay.call<MutedList>({ method: 'GET', path: '/api/v1/agents/me/muted' });
    this.#muted = new Set(list.muted.map((m) => m.agent_number));
  }

  /**
   * Records the relay's receipts for messages this agent sent (the recipient acknowledged
   * them), from the stored cursor on. Returns how many were new.
   */
  async fetchReceipts(): Promise<number> {
    let added = 0;
    let stray = 0;
    let since = relayCursor(this.archive.getCursor(RECEIPTS_CURSOR)) ?? 0;
    let refused = 0;
    // bounded: a relay that keeps answering "more" does not keep the daemon asking (the rest
    // comes with the next call)
    for (let pages = 0; pages < RECEIPT_PAGES_PER_CALL; pages++) {
      const page = await this.relay.call<ReceiptsResponse>({
        method: 'GET',
        path: `/api/v1/receipts?since=${since}&limit=100`,
      });
      const listed: unknown[] = Array.isArray(page?.receipts) ? page.receipts : [];
      const receipts = listed.filter(isReceipt);
      refused += listed.length - receipts.length;
      const next = relayCursor(page?.next);
      const more = listed.length > 0 && next !== undefined && next > since;
      // one transaction per page, the cursor with it
      const got = this.archive.recordReceiptPage(receipts, {
        name: RECEIPTS_CURSOR,
        value: more ? (next as number) : since,
      });
      stray += got.stray;
      added += got.added.length;
      for (const r of got.added) {
        this.events.emit({
          type: 'receipt',
          agent: this.name,
          message_id: r.message_id,
          recipient: r.recipient,
          acked_at: r.acked_at,
        });
      }
      if (!more) break;
      since = next as number;
    }
    if (refused > 0)
      this.log.warn({ agent: this.name, refused }, 'relay receipts refused: not a message id, agent or time');
    if (stray > 0) this.archive.pruneStrayReceipts(STRAY_RECEIPTS_KEPT);
    return added;
  }

  /** While connected, asks for receipts as long as a recent sent message waits for one. */
  async #pollReceipts(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.#sleep(this.#opts.receiptsPollMs, signal);
      if (signal.aborted || this.#state !== 'connected') continue;
      if (!this.archive.awaitingReceipts(new Date(Date.now() - RECEIPTS_HORIZON_MS).toISOString())) continue;
      try {
        await this.fetchReceipts();
      } catch (err) {
        this.log.warn({ agent: this.name, err: (err as Error).message }, 'could not fetch receipts');
      }
    }
  }

  async #run(signal: AbortSignal): Promise<void> {
    let attempt = 0;
    let refusals = 0;
    let quiet = false;
    let quickRenewals = 0;
    while (!signal.aborted) {
      // a refused agent stays shown as refused while it asks again; a token renewal is no news
      if (refusals === 0 && !quiet) this.#setState('connecting');
      quiet = false;
      try {
        const { cursor: from, mutesRead } = await this.#catchUp(signal);
        const res = await this.relay.openStream(from, signal);
        const openedAt = Date.now();
        refusals = 0;
        // before the first envelope is handled, so a muted sender's messages stay quiet
        if (!mutesRead) await this.refreshMutes();
        this.#setState('connected');
        attempt = 0;
        await this.#flushAcks();
        let tokenEnded = false;
        for await (const ev of readSse(res)) {
          if (ev.event === 'error') {
            tokenEnded = this.#streamRefused(ev.data);
            continue;
          }
          if (ev.event !== 'envelope') continue;
          const item = JSON.parse(ev.data) as InboundItem & { cursor: number };
          await this.handle(item);
          // the cursor moves only after the envelope is archived (or finally refused), and
          // only to one the relay could take back
          const cursor = relayCursor(item.cursor);
          if (cursor !== undefined) this.archive.setCursor(STREAM_CURSOR, cursor);
          else this.log.warn({ agent: this.name }, 'stream event without a usable cursor; the cursor stays');
        }
        if (signal.aborted) break;
        if (tokenEnded) {
          quickRenewals = Date.now() - openedAt < QUIET_RENEWAL_MIN_MS ? quickRenewals + 1 : 0;
          if (quickRenewals <= 1) {
            quiet = true;
            continue;
          }
        }
        this.log.info({ agent: this.name }, 'relay stream ended; reconnecting');
      } catch (err) {
        if (signal.aborted) break;
        if (await this.#waitIfRefused(err, refusals, signal)) {
          refusals++;
          continue;
        }
        // a network error says little by itself ("aborted", "connect ECONNREFUSED …"); the
        // pending read before the stream finds it out as relay_unreachable, with the same cause
        const unanswered =
          err instanceof DaemonError && err.code === 'relay_unreachable' && err.cause instanceof Error
            ? err.cause
            : err;
        this.#noteError(
          unanswered instanceof DaemonError
            ? unanswered.message
            : `the relay does not answer (${(unanswered as Error).message})`,
        );
        this.log.warn({ agent: this.name, err: (err as Error).message }, 'relay stream failed; reconnecting');
      }
      if (signal.aborted) break;
      await this.#backoff(attempt++, signal);
    }
  }

  /**
   * The relay's last word on a stream it ends. `invalid_token`: the token the stream was
   * opened with expired (or the agent was revoked); a fresh one is taken for the next
   * connect instead of finding out from a refusal (the clocks of daemon and relay differ).
   * True for that one.
   */
  #streamRefused(data: string): boolean {
    let error: { error?: unknown; message?: unknown } = {};
    try {
      error = JSON.parse(data) as typeof error;
    } catch {
      // not JSON: reported as it came
    }
    if (error.error === 'invalid_token') this.credentials.invalidate();
    const text = (v: unknown) => (typeof v === 'string' ? v.slice(0, 200) : undefined);
    this.log.info(
      { agent: this.name, error: text(error.error) ?? text(data), message: text(error.message) },
      'relay ended the stream',
    );
    return error.error === 'invalid_token';
  }

  /**
   * When `err` is the relay refusing the agent's own identity, or any failure of an agent
   * already refused (a 429 once its sign-ins used up the allowance, the network): the session
   * shows refused and waits long (30 s doubling to 15 min with `refusals`, or until woken),
   * and the answer is true. Any other error of an agent not refused: false, at once.
   */
  async #waitIfRefused(err: unknown, refusals: number, signal: AbortSignal): Promise<boolean> {
    if (relayCode(err) !== 'invalid_sign_in' && refusals === 0) return false;
    const delay = Math.min(REFUSED_RETRY_MAX_MS, this.#opts.refusedRetryMinMs * 2 ** refusals);
    this.#setState('refused');
    this.log.warn({ agent: this.name, err: (err as Error).message, retry_in_ms: delay }, 'relay refuses the agent');
    await this.#sleep(delay, signal, (wake) => {
      this.#wake = wake;
    });
    return true;
  }

  /** Connecting again after the backoff of retry `attempt` (doubling, capped, ±25 %); a reconnect request cuts it short. */
  async #backoff(attempt: number, signal: AbortSignal): Promise<void> {
    this.#setState('connecting');
    const delay = Math.min(this.#opts.reconnectMaxMs, this.#opts.reconnectMinMs * 2 ** attempt);
    await this.#sleep(delay * (0.75 + Math.random() * 0.5), signal, (wake) => {
      this.#wake = wake;
    });
  }

  /**
   * Receives through a named source: each envelope pulled from the hub (in stream order) is
   * archived, then acknowledged on the hub, then on the relay (which deletes it and writes
   * the sender's receipt). A crash before the hub's ack brings the envelope again, and the
   * archive takes it once.
   */
  async #runSource(feed: SourceFeed, signal: AbortSignal): Promise<void> {
    let attempt = 0;
    let refusals = 0;
    const up = async () => {
      await this.#sourceUp();
      refusals = 0;
    };
    while (!signal.aborted) {
      if (refusals === 0) this.#setState('connecting');
      try {
        // connected once the hub answers for the source, before any message comes
        for await (const m of feed.pull(signal, up)) {
          // a failure that may pass throws: the feed gives this envelope back, then the rest
          const outcome = await this.inbound.process(m.item);
          await m.ack();
          this.log.info(
            { agent: this.name, message_id: m.item.message_id, via: 'source', durable: feed.durable, outcome },
            'envelope received',
          );
          await this.ackRelay(m.item.message_id);
          attempt = 0;
        }
      } catch (err) {
        if (signal.aborted) break;
        // The hub alone cannot tell a source given back with its revoked agent from one that
        // fails for a while: the relay is asked whether it still knows the agent (and the
        // mute list is fresh for the next connect).
        const refusal = await this.#readMutes().then(
          () => undefined,
          (probe: unknown) => probe,
        );
        // the relay answered for the agent: whatever fails is the hub's, not a refusal
        if (refusal === undefined) refusals = 0;
        if (await this.#waitIfRefused(refusal ?? err, refusals, signal)) {
          refusals++;
          continue;
        }
        this.#noteError((err as Error).message);
        this.log.warn(
          { agent: this.name, durable: feed.durable, err: (err as Error).message },
          'named source failed; retrying',
        );
      }
      if (signal.aborted) break;
      await this.#backoff(attempt++, signal);
    }
  }

  async #sourceUp(): Promise<void> {
    if (this.#state === 'connected') return;
    await this.refreshMutes();
    this.#setState('connected');
    await this.#flushAcks();
  }

  /** Pulls every pending envelope over plain HTTP (no stream needed) and processes it. */
  async sync(): Promise<SyncResult> {
    const result: SyncResult = { agent: this.name, fetched: 0, archived: 0, rejected: 0, receipts: 0 };
    // nothing to pull over HTTP for an agent of this machine only (its messages come over the
    // local bus) nor for a leaf uplink identity (no agent routes on the relay; see start())
    if (!this.config.capabilities.includes('http-relay')) return result;
    await this.refreshMutes();
    await this.#readPending((_item, outcome) => {
      result.fetched++;
      if (outcome === 'archived') result.archived++;
      if (outcome === 'rejected') result.rejected++;
    });
    await this.#flushAcks();
    result.receipts = await this.fetchReceipts();
    this.#wakeOutbox?.();
    return result;
  }

  /**
   * Reads the pending inbox from the start and processes (and acks) each envelope, in the
   * relay's order. Bounded, and only forward: a relay whose pages repeat, go back or never
   * end does not keep the read going (what is left stays pending for the stream or the next
   * read). `beforeFirst` runs once, before the first envelope is handled; `signal` ends the
   * read between two envelopes.
   */
  async #readPending(
    each: (item: PendingResponse['envelopes'][number], outcome: InboundOutcome) => void,
    opts: { beforeFirst?: () => Promise<void>; signal?: AbortSignal } = {},
  ): Promise<void> {
    const { beforeFirst, signal } = opts;
    let after = 0;
    let first = true;
    for (let pages = 0; pages < SYNC_PAGES_PER_CALL; pages++) {
      const page = await this.relay.call<PendingResponse>({
        method: 'GET',
        path: `/api/v1/messages/pending?limit=100&after=${after}`,
        ...(signal ? { signal } : {}),
      });
      let next = after;
      // the relay's word: a page that is no list has nothing in it
      for (const item of Array.isArray(page?.envelopes) ? page.envelopes : []) {
        if (signal?.aborted) return;
        if (first) await beforeFirst?.();
        first = false;
        each(item, await this.handle(item));
        next = item.cursor;
      }
      if (!page.more || !(relayCursor(next) !== undefined && next > after)) break;
      after = next;
    }
  }

  /**
   * Before each stream connect: the pending inbox, read once from the start. An envelope the
   * daemon had not taken (not a duplicate) at or below the kept stream cursor is one the
   * stream would never bring: the cursor is ahead of what the relay holds (one a hostile
   * relay or a man in the middle made up, say 999999999999999). It goes back to 0, not to the
   * highest sequence read here: the pending answer is the relay's word too, and the stream
   * sends only what is still pending (unacknowledged), so from 0 it costs no more than this
   * read and skips no envelope recorded late behind higher ones. Returns the cursor to open
   * the stream with, and whether the mute list was read (before the first envelope).
   */
  async #catchUp(signal: AbortSignal): Promise<{ cursor: number; mutesRead: boolean }> {
    const kept = relayCursor(this.archive.getCursor(STREAM_CURSOR)) ?? 0;
    let mutesRead = false;
    let behind = 0;
    await this.#readPending(
      (item, outcome) => {
        const at = relayCursor(item.cursor);
        if (outcome !== 'duplicate' && at !== undefined && at <= kept) behind++;
      },
      {
        signal,
        // so that a muted sender's messages stay quiet here too
        beforeFirst: async () => {
          await this.refreshMutes();
          mutesRead = true;
        },
      },
    );
    if (behind === 0 || kept === 0) return { cursor: kept, mutesRead };
    this.archive.setCursor(STREAM_CURSOR, 0);
    this.log.warn(
      { agent: this.name, cursor: kept, envelopes: behind },
      'stream cursor ahead of the relay: it held envelopes behind it; the stream reads from the start',
    );
    return { cursor: 0, mutesRead };
  }
}
