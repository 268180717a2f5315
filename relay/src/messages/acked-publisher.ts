/**
 * JetStream publishes without a promise-and-request object per message: each publish
 * carries a reply subject under one inbox prefix, and one wildcard subscription routes
 * the stream's acknowledgements back. This is the fastest way the NATS client allows
 * (the per-message request of `js.publish` was the relay's bottleneck).
 */
import {
  createInbox,
  type MsgHdrs,
  MsgHdrsImpl,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';

/**
 * The two headers of a JetStream publish, set without nats.js's per-key work (a canonical
 * name written character by character, look-ups for keys that differ only in case, a
 * pattern test per value), which cost more per envelope than the relay's own checks of
 * it, and encoded into the Buffer pool rather than an allocation of their own. Still a
 * whole header set: anything else the client asks of it works as usual.
 */
class PublishHeaders extends MsgHdrsImpl {
  constructor(msgId: string, stream: string) {
    super();
    if (/[\r\n]/.test(msgId) || /[\r\n]/.test(stream)) throw new Error('a header value cannot hold \\r or \\n');
    this.headers.set('Nats-Msg-Id', [msgId]);
    this.headers.set('Nats-Expected-Stream', [stream]);
  }

  override encode(): Uint8Array {
    return Buffer.from(this.toString());
  }
}

/** The stream answered and refused the message (as opposed to not answering at all). */
export class PublishRefusedError extends Error {
  readonly errCode: number | undefined;

  constructor(description: string, errCode: number | undefined) {
    super(`JetStream refused the publish: ${description}`);
    this.name = 'PublishRefusedError';
    this.errCode = errCode;
  }

  /** The stream or the account is at its message or byte limit (a quota, not an outage). */
  get storageFull(): boolean {
    return /maximum (messages|bytes)|resource limits exceeded|insufficient (storage )?resources/i.test(this.message);
  }
}

/** A stored publish: its stream sequence, and whether JetStream had the message id already. */
export interface PublishAck {
  seq: number;
  /** the id was seen within the stream's deduplication window: seq is the first publish's */
  duplicate?: boolean;
}

interface Waiter {
  resolve(ack: PublishAck): void;
  reject(err: Error): void;
  /** when published (the timeout counts from here) */
  at: number;
  subject: string;
  data: Uint8Array;
  headers: MsgHdrs;
}

interface PubAck {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code?: number; err_code?: number; description?: string };
}

export class AckedPublisher {
  readonly #nc: NatsConnection;
  readonly #prefix = createInbox();
  readonly #waiting = new Map<string, Waiter>();
  readonly #sub: Subscription;
  readonly #sweeper: NodeJS.Timeout;
  readonly #timeoutMs: number;
  #next = 0;
  #reconnects = 0;

  constructor(nc: NatsConnection, timeoutMs: number) {
    this.#nc = nc;
    this.#timeoutMs = timeoutMs;
    this.#sub = nc.subscribe(`${this.#prefix}.*`, {
      callback: (err, msg) => {
        if (err) return;
        const token = msg.subject.slice(this.#prefix.length + 1);
        const waiter = this.#waiting.get(token);
        if (!waiter) return; // timed out already
        this.#waiting.delete(token);
        if (msg.headers?.code === 503) {
          waiter.reject(new Error('no JetStream stream answered (no responders)'));
          return;
        }
        let ack: PubAck;
        try {
          ack = msg.json<PubAck>();
        } catch {
          waiter.reject(new Error('unreadable JetStream acknowledgement'));
          return;
        }
        if (ack.error || typeof ack.seq !== 'number') {
          waiter.reject(new PublishRefusedError(ack.error?.description ?? 'no sequence', ack.error?.err_code));
        } else {
          waiter.resolve(ack as PublishAck); // the parsed acknowledgement itself: no copy per envelope
        }
      },
    });
    // One timer for all outstanding publishes instead of one per message.
    this.#sweeper = setInterval(() => this.#sweep(), Math.min(1000, this.#timeoutMs));
    this.#sweeper.unref();
    void this.#followConnection();
  }

  /**
   * A publish whose connection dropped gets no acknowledgement (the node died, or the
   * acknowledgement went with the connection): it fails at once instead of at the timeout,
   * and the client's retry (same message id: JetStream deduplicates it) goes through
   * another node. A publish made while the client reconnects never leaves this process: the
   * NATS client discards what it buffered when it dials again (its prepare()). Those are sent
   * again once it has reconnected (a stall of the whole timeout in the kill test, every few
   * runs); a copy that did go out is deduplicated by JetStream on the message id.
   */
  async #followConnection(): Promise<void> {
    for await (const s of this.#nc.status()) {
      if (s.type === 'disconnect') {
        for (const [token, w] of this.#waiting) {
          this.#waiting.delete(token);
          w.reject(new Error('the bus connection dropped before the JetStream acknowledgement'));
        }
      } else if (s.type === 'reconnect') {
        this.#reconnects++;
        for (const [token, w] of this.#waiting) {
          try {
            this.#send(token, w.subject, w.data, w.headers);
          } catch {
            // closed or draining: the timeout answers it
          }
        }
      }
    }
  }

  /** How many times the connection has reconnected (a node died, or the network dropped). */
  get reconnects(): number {
    return this.#reconnects;
  }

  /** Publishes to the stream named, deduplicated on msgId; resolves with the stream sequence. */
  publish(subject: string, data: Uint8Array, msgId: string, stream: string): Promise<PublishAck> {
    const token = (this.#next++).toString(36);
    const h = new PublishHeaders(msgId, stream);
    return new Promise<PublishAck>((resolve, reject) => {
      this.#waiting.set(token, { resolve, reject, at: Date.now(), subject, data, headers: h });
      try {
        this.#send(token, subject, data, h);
      } catch (err) {
        this.#waiting.delete(token);
        reject(err as Error);
      }
    });
  }

  #send(token: string, subject: string, data: Uint8Array, h: MsgHdrs): void {
    this.#nc.publish(subject, data, { reply: `${this.#prefix}.${token}`, headers: h });
  }

  #sweep(): void {
    const expired = Date.now() - this.#timeoutMs;
    for (const [token, w] of this.#waiting) {
      if (w.at > expired) break; // insertion order = age order: the rest are younger
      this.#waiting.delete(token);
      w.reject(new Error(`no JetStream acknowledgement within ${this.#timeoutMs} ms`));
    }
  }

  close(): void {
    clearInterval(this.#sweeper);
    this.#sub.unsubscribe();
    for (const w of this.#waiting.values()) w.reject(new Error('publisher closed'));
    this.#waiting.clear();
  }
}
