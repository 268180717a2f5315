/**
 * Routing sealed envelopes: send (one envelope per recipient, idempotent on the message
 * id), the pending inbox (long-poll), acknowledgement with a receipt for the sender.
 * The relay checks shape, sender and bindings; it never sees plaintext.
 */
import { randomUUID } from 'node:crypto';
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
import {
  type DroppedEnvelopeRow,
  type EnvelopeRow,
  envelopeKey,
  type IgnoredRow,
  type MessageStore,
  type Recipient,
  type TotalsChange,
} from '../ledger/messages.js';
import type { LedgerStores } from '../ledger/stores.js';
import { type PublishAck, PublishRefusedError } from '../messages/acked-publisher.js';
import type { BusInbox, PublishItem } from '../messages/bus-inbox.js';
import type { DeliveredWindow } from '../messages/delivered-window.js';
import { type InboxEvent, newInstanceId } from '../messages/inbox-events.js';
import { InboxNotifier } from '../messages/inbox-notifier.js';
import { isFull, PendingTotals } from '../messages/pending-totals.js';
import { RecentEnvelopes } from '../messages/recent-envelopes.js';
import { StreamSlots } from '../messages/stream-slots.js';

const iso = (ms: number): string => new Date(ms).toISOString();

/** A recipient of a batch, looked up once per request; `seen`: the message ids sent to it so far. */
interface RecipientEntry {
  recipient: Recipient;
  blocked: boolean;
  webhook: boolean;
  seen: Set<string>;
}

/** An envelope whose recipient blocked its sender: accepted, recorded as done, never published. */
interface Dropped {
  recipient: Recipient;
  messageId: string;
  size: number;
  result: SendResponse['results'][number];
}

const droppedRow = (sender: AgentRow, d: Dropped, now: number): DroppedEnvelopeRow => ({
  recipient_row: d.recipient.id,
  message_id: d.messageId,
  tenant_id: sender.tenant_id,
  recipient_number: d.recipient.agent_number,
  sender_row: sender.id,
  sender_number: sender.agent_number,
  size: d.size,
  accepted_at: now,
});

const conflictError = (messageId: string) =>
  new SvcError('message_id_conflict', `message ${messageId} exists from another sender`);

/** The dropped envelopes the ledger had already (a retry) are duplicates. */
function markKnownDropped(outcome: { known?: Set<string> }, dropped: Dropped[]): void {
  for (const d of dropped) {
    if (outcome.known?.has(envelopeKey(d.recipient.id, d.messageId))) d.result.status = 'duplicate';
  }
}

/** An envelope to publish (a PublishItem) and record, and its answer (duplicate once the ledger says so). */
interface Outgoing extends PublishItem {
  /** the canonical envelope bytes (published, and kept for readers) */
  data: Buffer;
  recipient: Recipient;
  messageId: string;
  webhook: boolean;
  result: SendResponse['results'][number];
}

/** Recipients whose last check against what the stream still holds is remembered (the oldest forgotten first). */
const AGED_CHECKED_MAX = 10_000;

/**
 * Envelopes just accepted for followed recipients, so a waiting reader gets them without a
 * round trip to the stream.
 */
const RECENT_MAX = 20_000;
const RECENT_MAX_BYTES = 32 * 1024 * 1024;

export class Messaging {
  readonly #ctx: RelayBase;
  readonly #stores: LedgerStores;
  readonly store: MessageStore;
  readonly #inbox: BusInbox;
  readonly notifier: InboxNotifier;
  /** This instance's open event streams (SVC_RELAY_STREAMS_PER_AGENT per agent). */
  readonly streams: StreamSlots;
  readonly #recent = new RecentEnvelopes(RECENT_MAX, RECENT_MAX_BYTES);
  readonly #closing = new AbortController();
  /** This process among the relay instances sharing the bus and the ledger. */
  readonly #instance = newInstanceId();
  /**
   * Whether other relay instances may share the ledger (RelayBase.soleInstance). A sole
   * instance announces nothing and listens for nothing: an announcement per send request
   * was a publish and a socket write of its own (bench:relay).
   */
  readonly #shared: boolean;
  /** Quotas: envelopes a recipient may hold pending, envelopes a sender may send per second. */
  readonly #pendingTotals: PendingTotals;
  readonly #sendRate: TokenBuckets;
  /** A full recipient is checked for envelopes the stream no longer holds at most once a minute. */
  readonly #agedChecks: TokenBuckets;

  constructor(ctx: RelayBase) {
    this.#ctx = ctx;
    this.#stores = ctx.stores;
    this.store = ctx.stores.messages;
    this.#inbox = ctx.inbox;
    this.notifier = new InboxNotifier(ctx.now);
    const { limits } = ctx.config;
    this.streams = new StreamSlots(limits.streamsPerAgent);
    this.#shared = !ctx.soleInstance;
    this.#pendingTotals = new PendingTotals(
      this.store,
      { maxCount: limits.recipientMaxPending, maxBytes: limits.recipientMaxPendingBytes },
      // other relay instances send and acknowledge on a shared PostgreSQL ledger: nothing
      // cached (on a shared SQLite file, their inbox events make this one forget its totals)
      { shared: ctx.ledger.sql.dialect === 'postgres' },
    );
    this.#sendRate = new TokenBuckets({
      capacity: limits.sendBurstPerAgent,
      perSecond: limits.sendPerAgentPerSecond,
      now: ctx.now,
    });
    this.#agedChecks = new TokenBuckets({ capacity: 1, perSecond: 1 / 60, now: ctx.now, maxKeys: AGED_CHECKED_MAX });
    // Inboxes changed by other relay instances wake this one's readers too.
    if (this.#shared) {
      for (const tenant of ctx.config.tenants) {
        this.#inbox.listen(tenant, (e) => this.#onRemoteEvent(e), this.#closing.signal);
      }
    }
  }

  #onRemoteEvent(event: InboxEvent): void {
    if (event.from === this.#instance) return;
    for (const row of event.rows) {
      if (event.kind === 'revoked') {
        this.streams.recheck(row);
        continue;
      }
      this.#pendingTotals.forget(row);
      if (event.kind === 'recorded') this.notifier.notify(row);
    }
  }

  /**
   * `row` was just revoked (its ledger row says so): its event streams here and on every
   * other instance end now, not at their next periodic check.
   */
  agentRevoked(row: AgentRow): void {
    this.streams.recheck(row.id);
    this.#announce(row.tenant_id, 'revoked', [row.id]);
  }

  /** Best-effort: a lost event only delays other instances' readers until their next poll. */
  #announce(tenantId: string, kind: InboxEvent['kind'], rows: string[]): void {
    if (!this.#shared) return;
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

  /**
   * An envelope's checks against the sender's credentials. `canonical`: the envelope came
   * from the body parser's fast path, which validated it as strictly as parseEnvelope, cut
   * these bytes from the request and kept its header only (send-body.ts).
   */
  #check(
    sender: AgentRow,
    raw: unknown,
    index: number,
    canonical: Buffer | undefined,
  ): { header: EnvelopeHeader; bytes: Buffer } {
    let h: EnvelopeHeader;
    let bytes: Buffer;
    if (canonical !== undefined) {
      h = (raw as Pick<Envelope, 'header'>).header;
      bytes = canonical;
    } else {
      let envelope: Envelope;
      try {
        envelope = parseEnvelope(raw);
      } catch (err) {
        if (isEnvelopeError(err)) throw new SvcError('envelope_malformed', `envelopes[${index}]: ${err.message}`);
        throw err;
      }
      h = envelope.header;
      // Canonical: written again (every field was just checked to be plain ASCII).
      bytes = Buffer.from(encodeEnvelope(envelope), 'latin1');
    }
    if (bytes.length > MESSAGE_LIMITS.maxEnvelopeBytes) {
      throw new SvcError(
        'envelope_too_large',
        `envelopes[${index}] is ${bytes.length} bytes; the limit is ${MESSAGE_LIMITS.maxEnvelopeBytes}`,
      );
    }
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
    return { header: h, bytes };
  }

  /**
   * Sends a batch. The ledger is written once per request, after the publishes: JetStream
   * deduplicates a retried publish (the dedupe key names message, recipient and sender) and
   * the insert (ON CONFLICT DO NOTHING on the key recipient + message id) says which
   * envelopes were recorded already, so nothing is looked up before publishing. A retry
   * gets `duplicate`; another sender's id refuses the whole request (nothing recorded).
   * `canonical`: the envelopes' bytes when the body parser's fast path found them.
   */
  async send(sender: AgentRow, body: SendRequest, canonical?: readonly Buffer[]): Promise<SendResponse> {
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
    const recipients = new Map<string, RecipientEntry>();
    const results: SendResponse['results'] = [];
    const toPublish: Outgoing[] = [];
    const dropped: Dropped[] = [];
    for (const [i, raw] of body.envelopes.entries()) {
      const { header: h, bytes } = this.#check(sender, raw, i, canonical?.[i]);
      let entry = recipients.get(h.recipient);
      if (!entry) {
        const target = await this.store.sendTarget(sender.tenant_id, h.recipient, sender.agent_id);
        if (!target)
          throw new SvcError('unknown_recipient', `envelopes[${i}]: ${h.recipient} is not an agent of your tenant`);
        entry = { ...target, seen: new Set() };
        recipients.set(h.recipient, entry);
      }
      const result: SendResponse['results'][number] = {
        message_id: h.message_id,
        recipient: h.recipient,
        status: 'accepted',
      };
      results.push(result);
      // the same id twice in one request: the second is a duplicate of the first
      if (entry.seen.has(h.message_id)) {
        result.status = 'duplicate';
        continue;
      }
      entry.seen.add(h.message_id);
      // A recipient that blocked the sender gets nothing; the sender is not told (the id is
      // taken all the same: a retry answers duplicate, as it would otherwise).
      if (entry.blocked) {
        dropped.push({ recipient: entry.recipient, messageId: h.message_id, size: bytes.length, result });
        continue;
      }
      toPublish.push({
        recipient: entry.recipient,
        messageId: h.message_id,
        webhook: entry.webhook,
        result,
        recipientNumber: h.recipient,
        data: bytes,
        // The sender is part of the dedupe key: another sender's envelope under the same
        // id (say, one published just before a crash, never recorded) is never taken for ours.
        msgId: `${h.message_id}:${h.recipient}:${sender.id}`,
      });
    }
    if (toPublish.length === 0) {
      await this.#recordDropped(sender, dropped, now);
      return { results };
    }
    let reserved = new Map<string, { count: number; bytes: number }>();
    try {
      reserved = await this.#reserve(sender, toPublish);
      // (a full inbox's retry may have turned out to hold nothing new)
      const ignored =
        toPublish.length > 0
          ? await this.#publishAndRecord(sender, toPublish, now, dropped)
          : await this.#recordDropped(sender, dropped, now);
      const kept = new Map([...reserved].map(([row, t]) => [row, { ...t }]));
      // rows that were there already (a retry) count once
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
      for (const row of reserved.keys()) this.#pendingTotals.settle(row);
    }
    return { results };
  }

  /** Records what is dropped when nothing is published (nothing of it is ignored); another sender's id refuses the request. */
  async #recordDropped(sender: AgentRow, dropped: Dropped[], now: number): Promise<IgnoredRow[]> {
    if (dropped.length === 0) return [];
    const outcome = await this.store.insertMany(
      [],
      dropped.map((d) => droppedRow(sender, d, now)),
    );
    if ('conflict' in outcome) throw conflictError(outcome.conflict);
    markKnownDropped(outcome, dropped);
    return [];
  }

  /**
   * Reserves each recipient's share of the batch against its pending quota, or reserves
   * nothing. A full inbox may be full of this very batch (a retry of a send that was
   * recorded but whose answer was lost): what the ledger has already is taken out of the
   * batch (as duplicates, or refused when another sender holds the id) and the rest tried again.
   */
  async #reserve(sender: AgentRow, toPublish: Outgoing[]): Promise<Map<string, { count: number; bytes: number }>> {
    try {
      return await this.#reserveAll(toPublish);
    } catch (err) {
      if (!isFull(err)) throw err;
      if (await this.#expireAged(sender.tenant_id, toPublish)) {
        try {
          return await this.#reserveAll(toPublish);
        } catch (again) {
          if (!isFull(again)) throw again;
        }
      }
      let known = 0;
      for (let i = toPublish.length - 1; i >= 0; i--) {
        const p = toPublish[i] as Outgoing;
        const owner = (await this.store.existingSenders(p.recipient.id, [p.messageId])).get(p.messageId);
        if (owner === undefined) continue;
        if (owner !== sender.id) {
          throw new SvcError(
            'message_id_conflict',
            `message ${p.messageId} to ${p.recipient.agent_number} exists from another sender`,
          );
        }
        p.result.status = 'duplicate';
        toPublish.splice(i, 1);
        known++;
      }
      if (known === 0) throw err;
      return this.#reserveAll(toPublish);
    }
  }

  async #reserveAll(toPublish: Outgoing[]): Promise<Map<string, { count: number; bytes: number }>> {
    const per = new Map<string, { number: string; count: number; bytes: number }>();
    for (const p of toPublish) {
      const t = per.get(p.recipient.id) ?? { number: p.recipient.agent_number, count: 0, bytes: 0 };
      t.count++;
      t.bytes += p.data.length;
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

  /**
   * Publishes, then records in one insert. Every copy this request leaves in the stream is
   * its own: a publish JetStream takes for a duplicate (a retry within its deduplication
   * window, or a resend of this very publish) points at a first copy another request may
   * record or delete, so the envelope is published again under a key of this request's own.
   * Cleaning up is then safe without look-ups or locks: a refused request deletes all its
   * copies, a retry deletes the copy the ledger does not point at, and a first copy is
   * deleted once the ledger points elsewhere (no request can record it after that).
   */
  async #publishAndRecord(
    sender: AgentRow,
    toPublish: Outgoing[],
    now: number,
    dropped: Dropped[],
  ): Promise<IgnoredRow[]> {
    const tenant = sender.tenant_id;
    let acks: PublishAck[];
    /** item index → the first copy's sequence, for the publishes JetStream took for duplicates */
    let firstCopies: Map<number, number> | undefined;
    try {
      acks = await this.#inbox.publish(tenant, toPublish);
      firstCopies = await this.#ownCopies(tenant, toPublish, acks);
    } catch (err) {
      if (err instanceof PublishRefusedError && err.storageFull) {
        throw new SvcError('tenant_storage_full', undefined, { detail: err.message, cause: err });
      }
      throw new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
    }
    const seqs = acks.map((a) => a.seq);
    const outcome = await this.store.insertMany(
      toPublish.map((p, i) => ({
        recipient_row: p.recipient.id,
        message_id: p.messageId,
        tenant_id: tenant,
        recipient_number: p.recipient.agent_number,
        sender_row: sender.id,
        sender_number: sender.agent_number,
        stream_seq: seqs[i] as number,
        size: p.data.length,
        accepted_at: now,
        webhook: p.webhook,
      })),
      dropped.map((d) => droppedRow(sender, d, now)),
    );
    if ('conflict' in outcome) {
      // Another sender holds the id (recorded by an earlier request, or by another relay
      // instance just now): nothing of this request was recorded, so its copies go, or a
      // named source (a leaf) would still deliver them. First copies are their owners' to tidy.
      await Promise.all(seqs.map((seq) => this.#deleteCopy(tenant, seq)));
      throw conflictError(outcome.conflict);
    }
    markKnownDropped(outcome, dropped);
    /** the sequences the ledger already had, for the rows this request did not record */
    let recorded: Map<string, number> | undefined;
    if (outcome.ignored.length > 0) {
      recorded = new Map();
      const tidy: Promise<void>[] = [];
      for (const r of outcome.ignored) {
        recorded.set(envelopeKey(r.recipient_row, r.message_id), r.recorded_seq);
        if (r.recorded_seq !== r.stream_seq) tidy.push(this.#deleteCopy(tenant, r.stream_seq));
      }
      await Promise.all(tidy);
    }
    if (firstCopies) await this.#tidyFirstCopies(tenant, toPublish, seqs, firstCopies, recorded);
    let lastRow: string | undefined;
    let followed = false;
    const rows: string[] = [];
    for (const [i, p] of toPublish.entries()) {
      if (recorded?.has(envelopeKey(p.recipient.id, p.messageId))) {
        p.result.status = 'duplicate';
        continue;
      }
      if (p.recipient.id !== lastRow) {
        lastRow = p.recipient.id;
        followed = this.notifier.followed(lastRow);
        if (!rows.includes(lastRow)) rows.push(lastRow);
      }
      // Kept only for a recipient whose reader reads or waits here (or just did): it reads
      // them in a moment. The others' envelopes are read later, or by another instance, from the
      // stream, and would only push a waiting reader's out of the bounded memory.
      if (followed) this.#recent.add(tenant, seqs[i] as number, p.data);
    }
    for (const row of rows) this.notifier.notify(row);
    if (rows.length > 0) this.#announce(tenant, 'recorded', rows);
    return outcome.ignored;
  }

  /**
   * Publishes again, under a key of this request's own, each envelope whose publish
   * JetStream took for a duplicate, and says which first copies those were. Rare: only
   * retries (and resends after a lost acknowledgement) are duplicates.
   */
  async #ownCopies(tenantId: string, items: Outgoing[], acks: PublishAck[]): Promise<Map<number, number> | undefined> {
    const dup: number[] = [];
    for (const [i, ack] of acks.entries()) if (ack.duplicate) dup.push(i);
    if (dup.length === 0) return undefined;
    const again = await this.#inbox.publish(
      tenantId,
      dup.map((i) => {
        const item = items[i] as Outgoing;
        return { ...item, msgId: `${item.msgId}:${randomUUID()}` };
      }),
    );
    const first = new Map<number, number>();
    for (const [k, i] of dup.entries()) {
      first.set(i, (acks[i] as PublishAck).seq);
      acks[i] = again[k] as PublishAck;
    }
    return first;
  }

  /**
   * Deletes the first copies the ledger does not point at. The ledger holds one row per
   * envelope and never points it elsewhere: once this request's insert has written or found
   * that row, a first copy it does not name is recorded by nobody, ever.
   */
  async #tidyFirstCopies(
    tenantId: string,
    items: Outgoing[],
    seqs: number[],
    firstCopies: Map<number, number>,
    recorded: Map<string, number> | undefined,
  ): Promise<void> {
    const tidy: Promise<void>[] = [];
    for (const [i, first] of firstCopies) {
      const item = items[i] as Outgoing;
      const inLedger = recorded?.get(envelopeKey(item.recipient.id, item.messageId)) ?? seqs[i];
      if (inLedger !== first) tidy.push(this.#deleteCopy(tenantId, first));
    }
    await Promise.all(tidy);
  }

  /** Deletes a published copy no ledger row points at; best-effort (it ages out of the stream otherwise). */
  #deleteCopy(tenantId: string, seq: number): Promise<void> {
    return this.#inbox
      .delete(tenantId, seq)
      .catch((err: Error) => this.#ctx.logger.warn({ err: err.message, seq }, 'could not delete an unrecorded copy'));
  }

  /** The rows' envelopes, read from the stream; `gone`: the rows whose copies the stream no longer holds (its max age). */
  async #load(rows: EnvelopeRow[]): Promise<{ items: PendingItem[]; gone: EnvelopeRow[] }> {
    const gone: EnvelopeRow[] = [];
    const items = await Promise.all(
      rows.map(async (r): Promise<PendingItem | undefined> => {
        const data = this.#recent.get(r.tenant_id, r.stream_seq) ?? (await this.#inbox.get(r.tenant_id, r.stream_seq));
        if (!data) {
          gone.push(r);
          return undefined;
        }
        return {
          cursor: r.stream_seq,
          message_id: r.message_id,
          sender: r.sender_number,
          accepted_at: iso(r.accepted_at),
          // a view of the stored bytes, not a copy
          envelope: JSON.parse(
            Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'),
          ) as PendingItem['envelope'],
        };
      }),
    );
    return { items: items.filter((i): i is PendingItem => i !== undefined), gone };
  }

  /**
   * Marks done one reader's rows whose envelopes are gone from the stream, so that they no
   * longer hold its quota nor fill its pages: those below the stream's first sequence (its
   * max age took them). One that went missing above it (no path of the relay deletes a
   * pending envelope's copy) is only left out of the page, as before. True when any was
   * marked; best-effort (a failure leaves them for the next read).
   */
  async #expire(agent: AgentRow, gone: EnvelopeRow[]): Promise<boolean> {
    if (gone.length === 0) return false;
    return this.#markedDone(agent.tenant_id, async () => {
      const first = await this.#inbox.firstSeq(agent.tenant_id);
      const rows = gone.filter((r) => r.stream_seq < first);
      return rows.length > 0 ? this.store.expire(rows, this.#ctx.now()) : new Map();
    });
  }

  /**
   * A full inbox may be full of envelopes the stream no longer holds (its max age took them
   * before the recipient read them): rows below the stream's first sequence are marked
   * done, at most once a minute per recipient. True when any was.
   */
  async #expireAged(tenantId: string, toPublish: Outgoing[]): Promise<boolean> {
    let any = false;
    let first: number | undefined;
    for (const row of new Set(toPublish.map((p) => p.recipient.id))) {
      if (this.#agedChecks.take(row) > 0) continue;
      const marked = await this.#markedDone(tenantId, async () => {
        first ??= await this.#inbox.firstSeq(tenantId);
        return this.store.expireBelow(row, first, this.#ctx.now());
      });
      if (marked) any = true;
    }
    return any;
  }

  /** Runs a ledger change that marked envelopes done, and tells the quotas and the other instances. */
  async #markedDone(tenantId: string, mark: () => Promise<TotalsChange>): Promise<boolean> {
    let change: TotalsChange;
    try {
      change = await mark();
    } catch (err) {
      this.#ctx.logger.warn({ err: (err as Error).message }, 'could not mark expired envelopes done');
      return false;
    }
    if (change.size === 0) return false;
    for (const [row, t] of change) this.#pendingTotals.acknowledged(row, t.count, t.bytes);
    this.#announce(tenantId, 'acked', [...change.keys()]);
    const envelopes = [...change.values()].reduce((n, t) => n + t.count, 0);
    this.#ctx.logger.info({ envelopes }, 'envelopes past the stream age limit marked done');
    return true;
  }

  /**
   * Pending envelopes after the cursor, waiting up to waitMs for the first one. An event
   * stream passes its window instead of a bare cursor: it gets what it has not sent yet,
   * envelopes recorded late (behind higher sequences already sent) included.
   */
  async pending(
    agent: AgentRow,
    opts: {
      after: number;
      limit: number;
      /** a page stops before this many envelope bytes (it holds one envelope at least) */
      maxBytes?: number;
      waitMs: number;
      signal?: AbortSignal;
      window?: DeliveredWindow;
    },
  ): Promise<PendingResponse> {
    this.notifier.read(agent.id);
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
      const page = byteBudget(found.slice(0, opts.limit), opts.maxBytes);
      const more = found.length > page.length;
      if (found.length > 0 || Date.now() >= deadline || opts.signal?.aborted) {
        let loaded: { items: PendingItem[]; gone: EnvelopeRow[] };
        try {
          loaded = await this.#load(page);
        } catch (err) {
          throw new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
        }
        if (window) {
          for (const r of page) window.add(r.stream_seq, readAt);
          if (full) window.fullRead(readAt, seen, complete && !more);
        }
        // a page of envelopes the stream no longer holds: marked done, the next rows are read at once
        const expired = await this.#expire(agent, loaded.gone);
        if (expired && loaded.items.length === 0 && more && !opts.signal?.aborted) continue;
        return { envelopes: loaded.items, more };
      }
      if (window && full) window.fullRead(readAt, seen, complete);
      const untilFull = window ? Math.max(0, window.fullReadIn(Date.now())) : Number.POSITIVE_INFINITY;
      await this.notifier.wait(agent.id, Math.min(deadline - Date.now(), untilFull), opts.signal);
    }
  }

  async ack(agent: AgentRow, messageId: string): Promise<{ message_id: string; acked_at: string; already: boolean }> {
    const row = await this.store.find(agent.id, messageId);
    if (!row) throw new SvcError('unknown_message', `no message ${JSON.stringify(messageId)} addressed to you`);
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

/** The first rows of `rows` that fit in `maxBytes` of envelopes, one at least. */
function byteBudget(rows: EnvelopeRow[], maxBytes: number | undefined): EnvelopeRow[] {
  if (maxBytes === undefined) return rows;
  let bytes = 0;
  for (const [i, r] of rows.entries()) {
    bytes += r.size;
    if (bytes > maxBytes && i > 0) return rows.slice(0, i);
  }
  return rows;
}
