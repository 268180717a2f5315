/**
 * Routing sealed envelopes: send (one envelope per recipient, idempotent on the message
 * id), the pending inbox (long-poll), acknowledgement with a receipt for the sender.
 * The relay checks shape, sender and bindings; it never sees plaintext.
 */
import {
  type Envelope,
  type EnvelopeHeader,
  encodeEnvelope,
  isEnvelopeError,
  MESSAGE_LIMITS,
  type PendingItem,
  type PendingResponse,
  parseEnvelope,
  type ReceiptsResponse,
  type SendRequest,
  type SendResponse,
  SvcError,
} from '@svc/shared';
import type { RelayBase } from '../context.js';
import { RateLimitedError, TokenBuckets } from '../http/rate-limit.js';
import type { AgentRow } from '../ledger/ledger.js';
import type { EnvelopeRow, MessageStore, NewEnvelopeRow, Recipient } from '../ledger/messages.js';
import type { LedgerStores } from '../ledger/stores.js';
import { PublishRefusedError } from '../messages/acked-publisher.js';
import type { BusInbox } from '../messages/bus-inbox.js';
import type { DeliveredWindow } from '../messages/delivered-window.js';
import { type InboxEvent, newInstanceId } from '../messages/inbox-events.js';
import { InboxNotifier } from '../messages/inbox-notifier.js';
import { PendingTotals } from '../messages/pending-totals.js';
import { RecentEnvelopes } from '../messages/recent-envelopes.js';
import { canonicalBytesOf } from '../messages/send-body.js';

const iso = (ms: number): string => new Date(ms).toISOString();

/** Envelopes just accepted, so a waiting reader gets them without a round trip to the stream. */
const RECENT_MAX = 20_000;
const RECENT_MAX_BYTES = 64 * 1024 * 1024;

export class Messaging {
  readonly #ctx: RelayBase;
  readonly #stores: LedgerStores;
  readonly store: MessageStore;
  readonly #inbox: BusInbox;
  readonly notifier = new InboxNotifier();
  readonly #recent = new RecentEnvelopes(RECENT_MAX, RECENT_MAX_BYTES);
  readonly #closing = new AbortController();
  /** This process among the relay instances sharing the bus and the ledger. */
  readonly #instance = newInstanceId();
  /**
   * (recipient, message id) pairs being published right now, with their sender: a second
   * sender of the same id is refused before it publishes, since neither is in the ledger yet.
   */
  readonly #inFlight = new Map<string, { senderRow: string; requests: number }>();
  /** Quotas: envelopes a recipient may hold pending, envelopes a sender may send per second. */
  readonly #pendingTotals: PendingTotals;
  readonly #sendRate: TokenBuckets;

  constructor(ctx: RelayBase) {
    this.#ctx = ctx;
    this.#stores = ctx.stores;
    this.store = ctx.stores.messages;
    this.#inbox = ctx.inbox;
    const { limits } = ctx.config;
    this.#pendingTotals = new PendingTotals(
      this.store,
      { maxCount: limits.recipientMaxPending, maxBytes: limits.recipientMaxPendingBytes },
      // other relay instances send and acknowledge on a shared ledger: nothing cached
      { shared: ctx.ledger.sql.dialect === 'postgres' },
    );
    this.#sendRate = new TokenBuckets({
      capacity: limits.sendBurstPerAgent,
      perSecond: limits.sendPerAgentPerSecond,
      now: ctx.now,
    });
    // Inboxes changed by other relay instances wake this one's readers too.
    for (const tenant of ctx.config.tenants) {
      this.#inbox.listen(tenant, (e) => this.#onRemoteEvent(e), this.#closing.signal);
    }
  }

  #onRemoteEvent(event: InboxEvent): void {
    if (event.from === this.#instance) return;
    for (const row of event.rows) {
      this.#pendingTotals.forget(row);
      if (event.kind === 'recorded') this.notifier.notify(row);
    }
  }

  /** Best-effort: a lost event only delays other instances' readers until their next poll. */
  #announce(tenantId: string, kind: InboxEvent['kind'], rows: string[]): void {
    this.#inbox
      .announce(tenantId, { from: this.#instance, kind, rows })
      .catch((err: Error) => this.#ctx.logger.debug({ err: err.message }, 'could not announce an inbox change'));
  }

  /** Aborted when the relay shuts down: long-polls return and event streams end. */
  get closing(): AbortSignal {
    return this.#closing.signal;
  }

  shutdown(): void {
    this.#closing.abort();
  }

  #check(sender: AgentRow, raw: unknown, index: number): { envelope: Envelope; bytes: Buffer } {
    let envelope: Envelope;
    try {
      envelope = parseEnvelope(raw);
    } catch (err) {
      if (isEnvelopeError(err)) throw new SvcError('envelope_malformed', `envelopes[${index}]: ${err.message}`);
      throw err;
    }
    // Canonical: cut from the request by the fast path, or written again (every field was
    // just checked to be plain ASCII).
    const bytes = canonicalBytesOf(envelope) ?? Buffer.from(encodeEnvelope(envelope), 'latin1');
    if (bytes.length > MESSAGE_LIMITS.maxEnvelopeBytes) {
      throw new SvcError(
        'envelope_too_large',
        `envelopes[${index}] is ${bytes.length} bytes; the limit is ${MESSAGE_LIMITS.maxEnvelopeBytes}`,
      );
    }
    const h: EnvelopeHeader = envelope.header;
    if (h.sender !== sender.agent_number) {
      throw new SvcError(
        'sender_mismatch',
        `envelopes[${index}]: sender is ${h.sender}, you are ${sender.agent_number}`,
      );
    }
    if (h.deployment_id !== this.#ctx.deployment.deploymentId || h.tenant_id !== sender.tenant_id) {
      throw new SvcError(
        'envelope_binding_mismatch',
        `envelopes[${index}]: deployment or tenant differs from your credentials`,
      );
    }
    return { envelope, bytes };
  }

  async send(sender: AgentRow, body: SendRequest): Promise<SendResponse> {
    const now = this.#ctx.now();
    const wait = this.#sendRate.take(sender.id, body.envelopes.length);
    if (wait > 0) {
      throw new RateLimitedError(
        wait,
        `You are sending faster than the relay allows (${this.#ctx.config.limits.sendPerAgentPerSecond} envelopes per second); retry in ${wait} s.`,
      );
    }
    // Check everything before anything is published: a refused request stores nothing.
    // A batch usually goes to few recipients: look each one (and its block list) up once.
    const recipients = new Map<string, { recipient: Recipient; blocked: boolean; webhook: boolean }>();
    const checked: Array<{
      envelope: Envelope;
      bytes: Buffer;
      recipient: Recipient;
      blocked: boolean;
      webhook: boolean;
    }> = [];
    for (const [i, raw] of body.envelopes.entries()) {
      const { envelope, bytes } = this.#check(sender, raw, i);
      const number = envelope.header.recipient;
      let entry = recipients.get(number);
      if (!entry) {
        const recipient = await this.store.recipient(sender.tenant_id, number);
        if (!recipient)
          throw new SvcError('unknown_recipient', `envelopes[${i}]: ${number} is not an agent of your tenant`);
        entry = {
          recipient,
          blocked: await this.#stores.relations.has('block', sender.tenant_id, recipient.agent_id, sender.agent_id),
          webhook: await this.#stores.webhooks.hasEndpoint(recipient.id),
        };
        recipients.set(number, entry);
      }
      checked.push({ envelope, bytes, ...entry });
    }
    const results: SendResponse['results'] = [];
    const toPublish: Array<{ bytes: Buffer; recipient: Recipient; messageId: string; webhook: boolean }> = [];
    const seen = new Set<string>();
    // What is already recorded, one query per recipient of the batch.
    const known = new Map<string, Map<string, string>>();
    for (const { recipient } of recipients.values()) {
      const ids = checked.filter((c) => c.recipient.id === recipient.id).map((c) => c.envelope.header.message_id);
      known.set(recipient.id, await this.store.existingSenders(recipient.id, ids));
    }
    for (const { envelope, bytes, recipient, blocked, webhook } of checked) {
      const messageId = envelope.header.message_id;
      const key = `${recipient.id}\u0000${messageId}`;
      const existingSender = known.get(recipient.id)?.get(messageId);
      const existing = existingSender === undefined ? undefined : { sender_row: existingSender };
      const owner = existingSender ?? this.#inFlight.get(key)?.senderRow;
      if (owner !== undefined && owner !== sender.id) {
        throw new SvcError(
          'message_id_conflict',
          `message ${messageId} to ${recipient.agent_number} exists from another sender`,
        );
      }
      const duplicate = existing !== undefined || seen.has(key);
      seen.add(key);
      results.push({
        message_id: messageId,
        recipient: recipient.agent_number,
        status: duplicate ? 'duplicate' : 'accepted',
      });
      // A recipient that blocked the sender gets nothing; the sender is not told.
      if (duplicate || blocked) continue;
      toPublish.push({ bytes, recipient, messageId, webhook });
    }
    if (toPublish.length > 0) {
      // Checked (above) and claimed with no await in between, so two requests cannot both pass.
      const claims = toPublish.map((p) => this.#claim(`${p.recipient.id}\u0000${p.messageId}`, sender.id));
      let reserved = new Map<string, { count: number; bytes: number }>();
      try {
        reserved = await this.#reserve(toPublish);
        const ignored = await this.#publishAndRecord(sender, toPublish, checked.length, now);
        const kept = new Map([...reserved].map(([row, t]) => [row, { ...t }]));
        // rows that were there already (a concurrent retry recorded them) count once
        for (const r of ignored) {
          this.#pendingTotals.unreserve(r.recipient_row, 1, r.size);
          const k = kept.get(r.recipient_row);
          if (k) {
            k.count--;
            k.bytes -= r.size;
          }
        }
        for (const [row, k] of kept) this.#pendingTotals.recorded(row, k.count, k.bytes);
      } catch (err) {
        for (const [row, t] of reserved) this.#pendingTotals.unreserve(row, t.count, t.bytes);
        throw err;
      } finally {
        for (const key of claims) this.#release(key);
        for (const row of reserved.keys()) this.#pendingTotals.settle(row);
      }
    }
    return { results };
  }

  /** Reserves each recipient's share of the batch against its pending quota, or reserves nothing. */
  async #reserve(
    toPublish: Array<{ bytes: Buffer; recipient: Recipient }>,
  ): Promise<Map<string, { count: number; bytes: number }>> {
    const per = new Map<string, { number: string; count: number; bytes: number }>();
    for (const p of toPublish) {
      const t = per.get(p.recipient.id) ?? { number: p.recipient.agent_number, count: 0, bytes: 0 };
      t.count++;
      t.bytes += p.bytes.length;
      per.set(p.recipient.id, t);
    }
    const done = new Map<string, { count: number; bytes: number }>();
    try {
      for (const [row, t] of per) {
        await this.#pendingTotals.reserve(row, t.number, t.count, t.bytes);
        done.set(row, t);
      }
    } catch (err) {
      for (const [row, t] of done) {
        this.#pendingTotals.unreserve(row, t.count, t.bytes);
        this.#pendingTotals.settle(row);
      }
      throw err;
    }
    return done;
  }

  #claim(key: string, senderRow: string): string {
    const held = this.#inFlight.get(key);
    if (held) held.requests++;
    else this.#inFlight.set(key, { senderRow, requests: 1 });
    return key;
  }

  #release(key: string): void {
    const held = this.#inFlight.get(key);
    if (held && --held.requests === 0) this.#inFlight.delete(key);
  }

  async #publishAndRecord(
    sender: AgentRow,
    toPublish: Array<{ bytes: Buffer; recipient: Recipient; messageId: string; webhook: boolean }>,
    checkedCount: number,
    now: number,
  ): Promise<NewEnvelopeRow[]> {
    let seqs: number[];
    try {
      seqs = await this.#inbox.publish(
        sender.tenant_id,
        toPublish.map((p) => ({
          recipientNumber: p.recipient.agent_number,
          data: p.bytes,
          // The sender is part of the dedupe key: another sender's envelope under the same
          // id (say, one published just before a crash, never recorded) is never taken for ours.
          msgId: `${p.messageId}:${p.recipient.agent_number}:${sender.id}`,
        })),
      );
    } catch (err) {
      if (err instanceof PublishRefusedError && err.storageFull) {
        throw new SvcError('tenant_storage_full', undefined, { detail: err.message, cause: err });
      }
      throw new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
    }
    const outcome = await this.store.insertMany(
      toPublish.map((p, i) => ({
        recipient_row: p.recipient.id,
        message_id: p.messageId,
        tenant_id: sender.tenant_id,
        recipient_number: p.recipient.agent_number,
        sender_row: sender.id,
        sender_number: sender.agent_number,
        stream_seq: seqs[i] as number,
        size: p.bytes.length,
        accepted_at: now,
        webhook: p.webhook,
      })),
    );
    if ('conflict' in outcome) {
      // Another relay instance recorded it first: nothing of this request was recorded, and
      // what it published is not referenced (it ages out of the stream).
      throw new SvcError('message_id_conflict', `message ${outcome.conflict} exists from another sender`);
    }
    // The bytes may be views of the request body: kept as they are only when every
    // envelope of the request is kept, else copied, so that a few kept envelopes never
    // hold on to every byte of their requests.
    const wholeBody = toPublish.length === checkedCount;
    const rows = new Set<string>();
    for (const [i, p] of toPublish.entries()) {
      const kept = wholeBody ? p.bytes : Buffer.from(p.bytes);
      this.#recent.add(sender.tenant_id, seqs[i] as number, kept);
      this.notifier.notify(p.recipient.id);
      rows.add(p.recipient.id);
    }
    this.#announce(sender.tenant_id, 'recorded', [...rows]);
    return outcome.ignored;
  }

  async #load(rows: EnvelopeRow[]): Promise<PendingItem[]> {
    const items = await Promise.all(
      rows.map(async (r): Promise<PendingItem | undefined> => {
        const data = this.#recent.get(r.tenant_id, r.stream_seq) ?? (await this.#inbox.get(r.tenant_id, r.stream_seq));
        if (!data) return undefined; // expired from the stream (max age)
        return {
          cursor: r.stream_seq,
          message_id: r.message_id,
          sender: r.sender_number,
          accepted_at: iso(r.accepted_at),
          envelope: JSON.parse(Buffer.from(data).toString('utf8')) as PendingItem['envelope'],
        };
      }),
    );
    return items.filter((i): i is PendingItem => i !== undefined);
  }

  /**
   * Pending envelopes after the cursor, waiting up to waitMs for the first one. An event
   * stream passes its window instead of a bare cursor: it gets what it has not sent yet,
   * envelopes recorded late (behind higher sequences already sent) included.
   */
  async pending(
    agent: AgentRow,
    opts: { after: number; limit: number; waitMs: number; signal?: AbortSignal; window?: DeliveredWindow },
  ): Promise<PendingResponse> {
    const deadline = Date.now() + opts.waitMs;
    const window = opts.window;
    for (;;) {
      const readAt = Date.now();
      // a full read (back to the window's floor) about once a second while a late record is possible
      const full = window !== undefined && window.fullReadIn(readAt) <= 0;
      let found: EnvelopeRow[];
      let seen: number[] = [];
      let complete = true;
      if (window && full) {
        const want = opts.limit + 1 + window.size;
        const rows = await this.store.pending(agent.id, window.floor, want);
        complete = rows.length < want;
        seen = rows.map((r) => r.stream_seq);
        found = rows.filter((r) => !window.has(r.stream_seq));
      } else {
        found = await this.store.pending(agent.id, window ? window.after : opts.after, opts.limit + 1);
      }
      const more = found.length > opts.limit;
      if (found.length > 0 || Date.now() >= deadline || opts.signal?.aborted) {
        const page = found.slice(0, opts.limit);
        let envelopes: PendingItem[];
        try {
          envelopes = await this.#load(page);
        } catch (err) {
          throw new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
        }
        if (window) {
          for (const r of page) window.add(r.stream_seq, readAt);
          if (full) window.fullRead(readAt, seen, complete && !more);
        }
        return { envelopes, more };
      }
      if (window && full) window.fullRead(readAt, seen, complete);
      const untilFull = window ? Math.max(0, window.fullReadIn(Date.now())) : Number.POSITIVE_INFINITY;
      await this.notifier.wait(agent.id, Math.min(deadline - Date.now(), untilFull), opts.signal);
    }
  }

  async ack(agent: AgentRow, messageId: string): Promise<{ message_id: string; acked_at: string; already: boolean }> {
    const row = await this.store.find(agent.id, messageId);
    if (!row) throw new SvcError('unknown_message', `no message ${messageId} addressed to you`);
    if (row.acked_at !== null) return { message_id: messageId, acked_at: iso(row.acked_at), already: true };
    const now = this.#ctx.now();
    if (!(await this.store.acknowledge(row, now))) {
      const again = await this.store.find(agent.id, messageId);
      return { message_id: messageId, acked_at: iso(again?.acked_at ?? now), already: true };
    }
    this.#pendingTotals.acknowledged(row.recipient_row, 1, row.size);
    this.#recent.delete(row.tenant_id, row.stream_seq);
    this.#announce(row.tenant_id, 'acked', [row.recipient_row]);
    // The ledger is the source of truth; the bus copies are tidied best-effort. A webhook
    // whose first attempt has not gone out yet still needs the copy: the dispatcher tidies it.
    const log = this.#ctx.logger;
    if (!(await this.#stores.webhooks.firstAttemptPending(row.recipient_row, messageId))) {
      await this.#inbox
        .delete(row.tenant_id, row.stream_seq)
        .catch((err: Error) =>
          log.warn({ err: err.message, seq: row.stream_seq }, 'could not delete acknowledged envelope'),
        );
    }
    await this.#inbox
      .publishReceipt(
        row.tenant_id,
        row.sender_number,
        { message_id: messageId, recipient: row.recipient_number, acked_at: iso(now) },
        `ack:${messageId}:${row.recipient_number}`,
      )
      .catch((err: Error) => log.warn({ err: err.message }, 'could not publish receipt to the bus'));
    return { message_id: messageId, acked_at: iso(now), already: false };
  }

  async receipts(agent: AgentRow, since: number, limit: number): Promise<ReceiptsResponse> {
    const rows = await this.store.receipts(agent.id, since, limit);
    return {
      receipts: rows.map((r) => ({
        id: r.id,
        message_id: r.message_id,
        recipient: r.recipient_number,
        acked_at: iso(r.acked_at),
      })),
      next: rows.at(-1)?.id ?? since,
    };
  }
}
