/**
 * Envelopes on the bus: one JetStream message per (message, recipient) in the tenant's
 * SVC_MSGS stream under `msg.<agent_number>`, read back by sequence with direct get
 * (no consumer per reader), deleted on acknowledgement. Receipts go to SVC_ACKS.
 */
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { TimeoutError } from '@nats-io/transport-node';
import { ACKS_STREAM, MSGS_STREAM } from '../bus/index.js';
import type { RelayBus } from '../context.js';
import { AckedPublisher, type PublishAck } from './acked-publisher.js';
import { INBOX_EVENTS_SUBJECT, type InboxEvent, parseInboxEvent } from './inbox-events.js';

interface TenantClients {
  /** its requests time out after attemptMs; `rest`'s after the rest of the timeout */
  quick: JetStreamManager;
  rest: JetStreamManager;
  /** it follows the connection: its reconnect count says when a question went out on a connection now gone */
  publisher: AckedPublisher;
}

export interface PublishItem {
  recipientNumber: string;
  data: Uint8Array;
  /** JetStream dedupe key: a retried send within the window lands on the same sequence. */
  msgId: string;
}

/** What the inbox needs of the bus: a connection per tenant. */
type TenantConnections = Pick<RelayBus, 'tenantConnection'>;

/**
 * How long a bus request waits before it is asked again, when the connection reconnected
 * meanwhile: the question went out on a connection that is gone.
 */
const ASK_AGAIN_MS = 500;

/** Requests asked again because the connection kept reconnecting: a bound, not a policy. */
const MAX_ASKS_AFTER_RECONNECTS = 5;

export class BusInbox {
  readonly #bus: TenantConnections;
  readonly #timeoutMs: number;
  readonly #attemptMs: number;
  readonly #clients = new Map<string, Promise<TenantClients>>();

  constructor(bus: TenantConnections, timeoutMs = 5000) {
    this.#bus = bus;
    this.#timeoutMs = timeoutMs;
    this.#attemptMs = Math.min(ASK_AGAIN_MS, timeoutMs / 2);
  }

  /**
   * Runs an idempotent bus request. A request made while the connection reconnects never
   * leaves the client (it discards what it buffered), and one in flight when a node dies
   * loses its answer: a request unanswered after attemptMs is asked again when the
   * connection reconnected meanwhile, and otherwise waited for once more, with the rest of
   * the timeout. A slow bus is never asked more than twice.
   */
  async #retried<T>(clients: TenantClients, attempt: (jsm: JetStreamManager) => Promise<T>): Promise<T> {
    for (let i = 0; i < MAX_ASKS_AFTER_RECONNECTS; i++) {
      const reconnects = clients.publisher.reconnects;
      try {
        return await attempt(clients.quick);
      } catch (err) {
        if (!(err instanceof TimeoutError)) throw err;
        if (clients.publisher.reconnects === reconnects) break;
      }
    }
    return attempt(clients.rest);
  }

  #tenant(tenantId: string): Promise<TenantClients> {
    let c = this.#clients.get(tenantId);
    if (!c) {
      c = (async () => {
        const nc = await this.#bus.tenantConnection(tenantId);
        const opts = (timeout: number) => ({ timeout, checkAPI: false });
        return {
          quick: await jetstreamManager(nc, opts(this.#attemptMs)),
          rest: await jetstreamManager(nc, opts(this.#timeoutMs - this.#attemptMs)),
          publisher: new AckedPublisher(nc, this.#timeoutMs),
        };
      })();
      c.catch(() => this.#clients.delete(tenantId));
      this.#clients.set(tenantId, c);
    }
    return c;
  }

  /** Publishes all items at once; the acknowledgements come back on one subscription. */
  async publish(tenantId: string, items: PublishItem[]): Promise<PublishAck[]> {
    const { publisher } = await this.#tenant(tenantId);
    return Promise.all(
      items.map((it) => publisher.publish(`msg.${it.recipientNumber}`, it.data, it.msgId, MSGS_STREAM)),
    );
  }

  /**
   * The stored envelope bytes, or null when the stream no longer has them (expired).
   * Direct get may be answered by any replica; one that lags behind (a node back or a
   * leader just elected) has not got a fresh envelope yet, so a miss is asked again of the
   * stream leader, which has every stored message.
   */
  async get(tenantId: string, seq: number): Promise<Uint8Array | null> {
    const clients = await this.#tenant(tenantId);
    try {
      const m = await this.#retried(clients, (jsm) => jsm.direct.getMessage(MSGS_STREAM, { seq }));
      if (m) return m.data;
    } catch (err) {
      if (!notFound(err)) throw err;
    }
    try {
      const m = await this.#retried(clients, (jsm) => jsm.streams.getMessage(MSGS_STREAM, { seq }));
      return m ? m.data : null;
    } catch (err) {
      if (notFound(err)) return null;
      throw err;
    }
  }

  /**
   * The first sequence the tenant's stream holds (its last + 1 when empty): every envelope
   * below it has left the stream (its max age, or a purge), whatever any clock says.
   */
  async firstSeq(tenantId: string): Promise<number> {
    const clients = await this.#tenant(tenantId);
    return (await this.#retried(clients, (jsm) => jsm.streams.info(MSGS_STREAM))).state.first_seq;
  }

  async delete(tenantId: string, seq: number): Promise<void> {
    const clients = await this.#tenant(tenantId);
    try {
      await this.#retried(clients, (jsm) => jsm.streams.deleteMessage(MSGS_STREAM, seq, false));
    } catch (err) {
      if (!notFound(err)) throw err;
    }
  }

  /** Tells the other relay instances on the bus that these inboxes changed (best-effort, core NATS). */
  async announce(tenantId: string, event: InboxEvent): Promise<void> {
    const nc = await this.#bus.tenantConnection(tenantId);
    nc.publish(INBOX_EVENTS_SUBJECT, JSON.stringify(event));
  }

  /**
   * Receives the inbox events of the other instances in the tenant (its connection has no echo) until
   * the signal aborts. A connection that closes is replaced; the subscription follows it.
   */
  listen(tenantId: string, onEvent: (event: InboxEvent) => void, signal: AbortSignal, retryMs = 1000): void {
    const loop = async () => {
      while (!signal.aborted) {
        try {
          const nc = await this.#bus.tenantConnection(tenantId);
          const sub = nc.subscribe(INBOX_EVENTS_SUBJECT, {
            callback: (err, msg) => {
              if (err) return;
              const event = parseInboxEvent(msg.data);
              if (event) onEvent(event);
            },
          });
          const stop = () => sub.unsubscribe();
          signal.addEventListener('abort', stop, { once: true });
          await nc.closed();
          signal.removeEventListener('abort', stop);
        } catch {
          // the bus is down: /readyz reports it; try again shortly
        }
        if (!signal.aborted) await new Promise((r) => setTimeout(r, retryMs).unref());
      }
    };
    void loop();
  }

  async publishReceipt(tenantId: string, senderNumber: string, receipt: object, msgId: string): Promise<void> {
    const { publisher } = await this.#tenant(tenantId);
    await publisher.publish(`ack.${senderNumber}`, Buffer.from(JSON.stringify(receipt)), msgId, ACKS_STREAM);
  }
}

const notFound = (err: unknown): boolean => /no message found|not found/i.test((err as Error).message);
