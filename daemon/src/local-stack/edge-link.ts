/**
 * The daemon's own client connection to its local nats-server (the machine's edge). Two
 * uses:
 *
 * - Receiving across machines: each local agent's named source, a durable consumer on
 *   the hub's SVC_MSGS reached over the leaf link (JetStream domain `hub`), replies on
 *   the edge's own inbox prefix. Pulled in stream order; the caller archives, then acks.
 * - Local delivery: an envelope for another agent of this machine is a request on
 *   `svc.local.deliver`, answered once the recipient archived it. It needs no hub, so it
 *   keeps working while the uplink is down.
 *
 * Nothing that arrives on the local server is trusted for what it says: the daemon
 * verifies every envelope against keys it holds, as it does for the relay's.
 */
import { type JsMsg, jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { LOCAL_SUBJECT_PREFIX } from '../client/local-stack/server-config.js';
import { DaemonError } from '../errors.js';
import type { InboundItem } from '../session/inbound.js';

export const LOCAL_DELIVER_SUBJECT = `${LOCAL_SUBJECT_PREFIX}.deliver`;
const MSGS_STREAM = 'SVC_MSGS';
const PULL_BATCH = 64;
/** How long one pull waits on the hub before asking again (messages come as they arrive). */
const PULL_EXPIRES_MS = 5_000;
const JS_TIMEOUT_MS = 2_000;
const LOCAL_DELIVERY_TIMEOUT_MS = 15_000;

const ABORTED = Symbol('aborted');

/**
 * Gives back what the hub hands a pull nobody reads any more, until the pull ends: each
 * message comes again once the pull has expired (a nak without a delay would come straight
 * back into this same pull, which the hub serves first), to the next pull.
 */
async function giveBack(rest: AsyncGenerator<JsMsg>, endsAt: number): Promise<void> {
  for await (const m of rest) if (!nakLater(m, endsAt)) return;
}

/** What a pull hands over from `pending` (the read under way) on, until it ends or fails. */
async function* restOf(pending: Promise<IteratorResult<JsMsg>>, it: AsyncIterator<JsMsg>): AsyncGenerator<JsMsg> {
  for (let p = pending; ; p = it.next()) {
    const next = await p.catch(() => ({ done: true as const, value: undefined }));
    if (next.done) return;
    yield next.value;
  }
}

/** Naks `m` to come back after the pull ending at `endsAt`; false when the connection is gone (it comes back after the ack wait). */
function nakLater(m: JsMsg, endsAt: number): boolean {
  try {
    m.nak(afterPull(endsAt));
    return true;
  } catch {
    return false;
  }
}

/** A nak's delay that brings a message back just after a pull ending at `endsAt` expired. */
const afterPull = (endsAt: number) => Math.max(0, endsAt - Date.now()) + 250;

/** One message of a named source: the envelope, and its acknowledgement on the hub. */
export interface SourceMessage {
  item: InboundItem;
  seq: number;
  ack(): Promise<void>;
}

/** What a session receives through instead of the relay's HTTP stream. */
export interface SourceFeed {
  readonly durable: string;
  /** Pulls until the signal aborts; throws when the hub cannot be reached (the caller retries). */
  pull(signal: AbortSignal, onReady: () => Promise<void>): AsyncGenerator<SourceMessage>;
}

/** Answers of `svc.local.deliver`. */
export type LocalDeliveryAnswer = { outcome: string; received_at: string } | { error: string; message: string };

/**
 * The message id the relay published under: its Nats-Msg-Id is `<id>:<recipient>:<sender
 * row>`, and an id may itself contain `:`, so the last two parts are cut from the right.
 */
export function messageIdOf(natsMsgId: string | undefined): string | undefined {
  if (!natsMsgId) return undefined;
  const parts = natsMsgId.split(':');
  return parts.length >= 3 ? parts.slice(0, -2).join(':') : undefined;
}

/** The inbound item of a pulled message: the signed header names sender and id (inbound checks them). */
export function sourceItem(data: Uint8Array, natsMsgId: string | undefined): InboundItem {
  let envelope: unknown;
  try {
    envelope = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    envelope = undefined;
  }
  const header = (envelope as { header?: { sender?: unknown; message_id?: unknown } } | undefined)?.header;
  const sender = typeof header?.sender === 'string' ? header.sender : '';
  const id = typeof header?.message_id === 'string' ? header.message_id : undefined;
  // The relay checked at send time that the header's sender is the authenticated one.
  return { message_id: id ?? messageIdOf(natsMsgId) ?? '', sender, envelope };
}

export interface EdgeLinkOptions {
  /** how long one pull waits on the hub (default 5 s, at least 1 s; tests shorten it) */
  pullExpiresMs?: number;
}

export class EdgeLink {
  readonly #nc: NatsConnection;
  readonly #log: Logger;
  readonly #pullExpiresMs: number;
  #serving: Subscription | undefined;
  /** Told whether each pull reached the hub through the leaf link. */
  #hubListener: ((reached: boolean) => void) | undefined;

  private constructor(nc: NatsConnection, log: Logger, opts: EdgeLinkOptions) {
    this.#nc = nc;
    this.#log = log;
    this.#pullExpiresMs = opts.pullExpiresMs ?? PULL_EXPIRES_MS;
  }

  static async open(
    url: string,
    token: string,
    inboxPrefix: string | undefined,
    log: Logger,
    opts: EdgeLinkOptions = {},
  ): Promise<EdgeLink> {
    const nc = await connect({
      servers: url,
      token,
      name: 'svc-daemon',
      // the local server restarts under the daemon's supervision: never give up on it
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      ...(inboxPrefix ? { inboxPrefix } : {}),
    });
    return new EdgeLink(nc, log, opts);
  }

  /** `listener` hears, at each pull, whether it reached the hub (the leaf link is up and its creds taken). */
  onHub(listener: (reached: boolean) => void): void {
    this.#hubListener = listener;
  }

  /** The named source `durable` on the hub, pulled across the leaf link. */
  source(durable: string): SourceFeed {
    const nc = this.#nc;
    const expires = this.#pullExpiresMs;
    const hub = (reached: boolean) => this.#hubListener?.(reached);
    return {
      durable,
      async *pull(signal: AbortSignal, onReady: () => Promise<void>): AsyncGenerator<SourceMessage> {
        const js = jetstream(nc, { domain: 'hub', timeout: JS_TIMEOUT_MS });
        const consumer = await js.consumers.get(MSGS_STREAM, durable).catch((err: Error) => {
          if (!signal.aborted) hub(false);
          throw err;
        });
        hub(true);
        await onReady();
        const aborted = new Promise<typeof ABORTED>((resolve) => {
          if (signal.aborted) resolve(ABORTED);
          else signal.addEventListener('abort', () => resolve(ABORTED), { once: true });
        });
        while (!signal.aborted) {
          const endsAt = Date.now() + expires;
          const batch = await consumer.fetch({ max_messages: PULL_BATCH, expires });
          // iterated by hand: a caller that leaves early must not end the batch's iterator,
          // which still holds what the hub handed over after the message that failed
          const it = (batch as AsyncIterable<JsMsg>)[Symbol.asyncIterator]();
          let pending = it.next();
          let finished = false;
          let unacked: JsMsg | undefined;
          try {
            for (;;) {
              const next = await Promise.race([pending, aborted]);
              if (next === ABORTED) break;
              if (next.done) {
                finished = true;
                break;
              }
              const m = next.value;
              unacked = m;
              yield {
                item: sourceItem(m.data, m.headers?.get('Nats-Msg-Id')),
                seq: m.seq,
                ack: async () => {
                  await m.ackAck();
                  unacked = undefined;
                },
              };
              pending = it.next();
            }
          } finally {
            if (!finished && signal.aborted) {
              // Stopping. The hub holds this pull until it expires and hands it whatever
              // arrives meanwhile; nobody would take that, and it would come again only
              // after the consumer's ack wait (30 s). So the pull is drained to its end in
              // the background, and each such message (and one handed over, not
              // acknowledged) goes back to the next pull (a new session's, say) as soon as
              // this one has expired.
              if (!unacked || nakLater(unacked, endsAt)) void giveBack(restOf(pending, it), endsAt);
            } else if (!finished) {
              // the caller failed on `unacked`: let the pull run out (a nak while it is open
              // would come straight back into it), then give it and the rest back in stream
              // order, so the next pull hands them over again at once and in order
              const rest: JsMsg[] = unacked ? [unacked] : [];
              for await (const m of restOf(pending, it)) rest.push(m);
              for (const m of rest) m.nak();
            }
          }
          // a batch that ended on a lost leaf link must surface as an error, not as silence
          const info = await consumer.info().catch((err: Error) => {
            if (signal.aborted) return undefined;
            hub(false);
            throw err;
          });
          if (info === undefined) return;
        }
      },
    };
  }

  /**
   * Answers local deliveries: `deliver` archives the envelope for the recipient it names
   * (or refuses it) and says how it went.
   */
  serveLocal(deliver: (item: InboundItem) => Promise<LocalDeliveryAnswer>): void {
    this.#serving?.unsubscribe();
    this.#serving = this.#nc.subscribe(LOCAL_DELIVER_SUBJECT, {
      callback: (_err, m) => {
        if (!m.reply) return;
        let item: InboundItem;
        try {
          item = m.json<InboundItem>();
        } catch {
          m.respond(JSON.stringify({ error: 'validation_failed', message: 'not JSON' }));
          return;
        }
        deliver(item).then(
          (answer) => m.respond(JSON.stringify(answer)),
          (err: Error) => {
            this.#log.warn({ err: err.message }, 'local delivery failed');
            m.respond(JSON.stringify({ error: 'local_delivery_failed', message: err.message }));
          },
        );
      },
    });
  }

  /** Hands `item` to the recipient's daemon through the local server; resolves once it is archived. */
  async deliverLocal(item: InboundItem): Promise<{ outcome: string; received_at: string }> {
    let answer: LocalDeliveryAnswer;
    try {
      const reply = await this.#nc.request(LOCAL_DELIVER_SUBJECT, JSON.stringify(item), {
        timeout: LOCAL_DELIVERY_TIMEOUT_MS,
      });
      answer = reply.json<LocalDeliveryAnswer>();
    } catch (err) {
      throw new DaemonError('local_delivery_failed', `The local server did not deliver: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if ('error' in answer) throw new DaemonError('local_delivery_failed', `${answer.error}: ${answer.message}`);
    return answer;
  }

  async close(): Promise<void> {
    this.#serving?.unsubscribe();
    await this.#nc.close().catch(() => undefined);
  }
}
