/**
 * The pending-envelope index and delivery receipts: accepted envelopes are recorded a batch
 * per row (migration 013, envelope-batches.ts), each envelope's acknowledgement as a row of
 * its own, and read back as one EnvelopeRow per envelope.
 */
import {
  BATCH_MAX_SEQ_SPREAD,
  type BatchItem,
  batchItems,
  firstIdBound,
  planBatches,
  readItems,
} from './envelope-batches.js';
import type { Ledger } from './ledger.js';
import type { Sql } from './sql.js';
import type { WebhookStore } from './webhooks.js';

export interface EnvelopeRow {
  recipient_row: string;
  message_id: string;
  tenant_id: string;
  recipient_number: string;
  sender_row: string;
  sender_number: string;
  stream_seq: number;
  size: number;
  accepted_at: number;
  acked_at: number | null;
  /** the ledger row that records it with the rest of its request's envelopes to its recipient */
  batch_id: number;
}

/** An envelope to record; `webhook`: also queue a webhook delivery (migration 005) in the same transaction. */
export type NewEnvelopeRow = Omit<EnvelopeRow, 'acked_at' | 'batch_id'> & { webhook?: boolean };

/** One envelope's key in the ledger (recipient row and message id) as a single string, for sets and maps. */
export const envelopeKey = (recipientRow: string, messageId: string): string => `${recipientRow}\u0000${messageId}`;

/** A row that was already there from the same sender; `recorded_seq`: the stream sequence it points at. */
export type IgnoredRow = NewEnvelopeRow & { recorded_seq: number };

/**
 * Which rows were already there from the same sender, or the message id another sender
 * holds; `known`: the keys (envelopeKey) of the dropped envelopes the ledger had already.
 */
export type InsertOutcome = { conflict: string } | { ignored: IgnoredRow[]; known?: Set<string> };

/**
 * An envelope accepted and dropped (its recipient blocked the sender): recorded as done
 * (no stream copy, sequence 0), so that its id is taken like any other: a retry is a
 * duplicate, and the same id is not delivered after an unblock.
 */
export type DroppedEnvelopeRow = Omit<NewEnvelopeRow, 'stream_seq' | 'webhook'>;

export interface ReceiptRow {
  id: number;
  message_id: string;
  recipient_number: string;
  acked_at: number;
}

/** An active agent that can be written to, looked up by number on every send. */
export interface Recipient {
  id: string;
  agent_id: string;
  agent_number: string;
}

/** Changes to recipients' pending totals: recipient row → count and bytes to add. */
export type TotalsChange = Map<string, { count: number; bytes: number }>;

/** A stored batch as the reads take it. */
interface BatchRow {
  id: number;
  recipient_row: string;
  tenant_id: string;
  recipient_number: string;
  sender_row: string;
  sender_number: string;
  accepted_at: number;
  message_ids: string;
  seqs: string;
  sizes: string;
}

/** A stored batch with its done envelopes' ids, comma-separated (null: none), as pending reads take it. */
type PendingBatchRow = BatchRow & { done_ids: string | null };

const BATCH_FIELDS =
  'b.id, b.recipient_row, b.tenant_id, b.recipient_number, b.sender_row, b.sender_number, b.accepted_at';

const INSERT_BATCH = `INSERT INTO envelope_batches (recipient_row, tenant_id, recipient_number, sender_row, sender_number,
    accepted_at, first_id, last_id, first_seq, last_seq, message_ids, seqs, sizes, pending_count, pending_bytes)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`;

/** The batches whose id range meets [lowest, highest] (`firstFrom`: firstIdBound of the lowest). */
const OVERLAPPING = `SELECT b.id, b.sender_row, b.message_ids, b.seqs FROM envelope_batches b
  WHERE b.recipient_row = ? AND b.first_id >= ? AND b.first_id <= ? AND b.last_id >= ?`;

/** find(): the batches that may hold one id, with that id's done time where it has one. */
const HOLDING = `SELECT ${BATCH_FIELDS}, b.message_ids, b.seqs, b.sizes, x.done_at
  FROM envelope_batches b LEFT JOIN envelopes_done x ON x.batch_id = b.id AND x.message_id = ?
  WHERE b.recipient_row = ? AND b.first_id >= ? AND b.first_id <= ? AND b.last_id >= ?`;

/** Raises a recipient's id mark (the greatest id recorded for it) to `last_id` if that is greater. */
const RAISE_MARK = `INSERT INTO envelope_id_marks (recipient_row, last_id) VALUES (?, ?)
  ON CONFLICT (recipient_row) DO UPDATE SET last_id = excluded.last_id WHERE excluded.last_id > envelope_id_marks.last_id`;

const ADD_TO_TOTALS = 'INSERT INTO pending_totals (recipient_row, pending_count, pending_bytes)';
const ADDED_TO_TOTALS = `ON CONFLICT (recipient_row) DO UPDATE SET
  pending_count = pending_totals.pending_count + excluded.pending_count,
  pending_bytes = pending_totals.pending_bytes + excluded.pending_bytes`;

/** Batches a pending read takes at a time. */
const PENDING_PAGE = 32;

const byBytes = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Adds count and bytes to a key's totals (a recipient's, or a batch's). */
function addChange<K>(change: Map<K, { count: number; bytes: number }>, key: K, count: number, bytes: number): void {
  const t = change.get(key) ?? { count: 0, bytes: 0 };
  t.count += count;
  t.bytes += bytes;
  change.set(key, t);
}

const negated = (change: TotalsChange): TotalsChange =>
  new Map([...change].map(([row, t]) => [row, { count: -t.count, bytes: -t.bytes }]));

/** Adds (or, negative, takes out) each recipient's change to its pending totals, in recipient order. */
async function addToTotals(q: Sql, change: TotalsChange): Promise<void> {
  if (change.size === 0) return;
  const rows = [...change].sort(([a], [b]) => byBytes(a, b));
  await q.run(
    `${ADD_TO_TOTALS} VALUES ${rows.map(() => '(?, ?, ?)').join(', ')} ${ADDED_TO_TOTALS}`,
    rows.flatMap(([row, t]) => [row, t.count, t.bytes]),
  );
}

/** What the ledger recorded of a message id for a recipient: who sent it, and its sequence (0: dropped). */
interface Recorded {
  sender_row: string;
  seq: number;
}

export class MessageStore {
  readonly #ledger: Ledger;
  readonly #webhooks: WebhookStore;

  constructor(ledger: Ledger, webhooks: WebhookStore) {
    this.#ledger = ledger;
    this.#webhooks = webhooks;
  }

  get #sql() {
    return this.#ledger.sql;
  }

  /** PostgreSQL keeps each recipient's pending totals in a row (migration 010); SQLite adds up its batches'. */
  get #totalsKept(): boolean {
    return this.#sql.dialect === 'postgres';
  }

  /** The active agent with this number in the tenant (a send's recipient). */
  recipient(tenantId: string, agentNumber: string): Promise<Recipient | undefined> {
    return this.#sql.get<Recipient>(
      'SELECT id, agent_id, agent_number FROM agents WHERE tenant_id = ? AND agent_number = ? AND revoked_at IS NULL',
      [tenantId, agentNumber],
    );
  }

  /**
   * A send's recipient (the active agent with this number in the tenant) with what the send
   * needs to know of it: whether it blocked the sender, whether it has a webhook endpoint.
   * One statement, not three: on SQLite each costs two file-lock calls and, on a busy
   * machine, far more than its plan; on PostgreSQL each is a round trip.
   */
  async sendTarget(
    tenantId: string,
    agentNumber: string,
    senderAgentId: string,
  ): Promise<{ recipient: Recipient; blocked: boolean; webhook: boolean } | undefined> {
    const r = await this.#sql.get<Recipient & { blocked: number | boolean; webhook: number | boolean }>(
      `SELECT a.id, a.agent_id, a.agent_number,
         EXISTS (SELECT 1 FROM agent_blocks k
                 WHERE k.tenant_id = a.tenant_id AND k.agent_id = a.agent_id AND k.target_agent_id = ?) AS blocked,
         EXISTS (SELECT 1 FROM agent_profiles p WHERE p.agent_row = a.id AND p.webhook_secret IS NOT NULL) AS webhook
       FROM agents a WHERE a.tenant_id = ? AND a.agent_number = ? AND a.revoked_at IS NULL`,
      [senderAgentId, tenantId, agentNumber],
    );
    if (r === undefined) return undefined;
    // SQLite answers 0 or 1, PostgreSQL a boolean
    return {
      recipient: { id: r.id, agent_id: r.agent_id, agent_number: r.agent_number },
      blocked: Boolean(r.blocked),
      webhook: Boolean(r.webhook),
    };
  }

  /** Count and bytes of the recipient's unacknowledged envelopes. */
  async pendingTotals(recipientRow: string): Promise<{ count: number; bytes: number }> {
    const r = await this.#sql.get<{ count: number; bytes: number }>(
      this.#totalsKept
        ? 'SELECT pending_count AS count, pending_bytes AS bytes FROM pending_totals WHERE recipient_row = ?'
        : `SELECT coalesce(sum(pending_count), 0) AS count, coalesce(sum(pending_bytes), 0) AS bytes
           FROM envelope_batches WHERE recipient_row = ? AND pending_count > 0`,
      [recipientRow],
    );
    return r ?? { count: 0, bytes: 0 };
  }

  /** For each of these message ids already recorded for the recipient: who sent it. */
  async existingSenders(recipientRow: string, messageIds: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (messageIds.length === 0) return out;
    let lowest = messageIds[0] as string;
    let highest = lowest;
    for (const id of messageIds) {
      if (id < lowest) lowest = id;
      else if (id > highest) highest = id;
    }
    const recorded = await this.#recorded(this.#sql, recipientRow, lowest, highest);
    for (const id of messageIds) {
      const r = recorded.get(id);
      if (r) out.set(id, r.sender_row);
    }
    return out;
  }

  /**
   * Every id recorded for the recipient in a batch whose id range meets [lowest, highest]
   * (which includes every recorded id in that range).
   */
  async #recorded(q: Sql, recipientRow: string, lowest: string, highest: string): Promise<Map<string, Recorded>> {
    const found = new Map<string, Recorded>();
    const batches = await q.all<{ sender_row: string; message_ids: string; seqs: string }>(OVERLAPPING, [
      recipientRow,
      firstIdBound(lowest),
      highest,
      lowest,
    ]);
    for (const b of batches) {
      const bIds = b.message_ids.split(',');
      const seqs = b.seqs.split(',');
      for (let i = 0; i < bIds.length; i++) {
        found.set(bIds[i] as string, { sender_row: b.sender_row, seq: Number(seqs[i]) });
      }
    }
    return found;
  }

  find(recipientRow: string, messageId: string, q: Sql = this.#sql): Promise<EnvelopeRow | undefined> {
    return this.#find(q, recipientRow, messageId);
  }

  async #find(q: Sql, recipientRow: string, messageId: string): Promise<EnvelopeRow | undefined> {
    const batches = await q.all<BatchRow & { done_at: number | null }>(HOLDING, [
      messageId,
      recipientRow,
      firstIdBound(messageId),
      messageId,
      messageId,
    ]);
    for (const b of batches) {
      const i = b.message_ids.split(',').indexOf(messageId);
      if (i < 0) continue;
      const seq = Number(b.seqs.split(',')[i]);
      const item = { message_id: messageId, stream_seq: seq, size: Number(b.sizes.split(',')[i]) };
      // a dropped envelope (no stream copy) was done when it was accepted
      return rowOf(b, item, seq === 0 ? b.accepted_at : b.done_at);
    }
    return undefined;
  }

  /**
   * Records accepted envelopes in one transaction; rows already present from the same
   * sender are kept as they are (`ignored`, with the sequence they point at). A row present
   * from another sender (an earlier request, or another relay instance just now) records
   * nothing and returns that row's message id. A new row marked `webhook` gets its webhook
   * delivery queued in the same transaction.
   *
   * Per recipient, in recipient order: its id mark is read (on PostgreSQL, locked: two
   * instances recording for one recipient take turns); ids that all sort after it cannot be
   * recorded yet, so nothing is looked up (the usual send: a sender's ids grow with time);
   * otherwise the batches whose id range meets the new ids' are read. Then the new
   * envelopes are inserted as one batch (usually; see planBatches) and the mark raised.
   * Each row's stream_seq is its own publish's: no row recorded already points at it.
   */
  async insertMany(rows: NewEnvelopeRow[], dropped: DroppedEnvelopeRow[] = []): Promise<InsertOutcome> {
    if (rows.length === 0 && dropped.length === 0) return { ignored: [] };
    try {
      return await this.#sql.transaction((tx) => this.#record(tx, rows, dropped));
    } catch (err) {
      if (err instanceof TakenByAnotherSender) return { conflict: err.messageId };
      throw err;
    }
  }

  async #record(tx: Sql, rows: NewEnvelopeRow[], dropped: DroppedEnvelopeRow[]): Promise<InsertOutcome> {
    const groups = new Map<string, { rows: NewEnvelopeRow[]; dropped: DroppedEnvelopeRow[] }>();
    const group = (row: string) => {
      let g = groups.get(row);
      if (!g) {
        g = { rows: [], dropped: [] };
        groups.set(row, g);
      }
      return g;
    };
    for (const r of rows) group(r.recipient_row).rows.push(r);
    for (const d of dropped) group(d.recipient_row).dropped.push(d);
    const ignored: IgnoredRow[] = [];
    const known = new Set<string>();
    const hooks: {
      recipient_row: string;
      message_id: string;
      accepted_at: number;
      batch_id: number;
      stream_seq: number;
    }[] = [];
    const change: TotalsChange = new Map();
    for (const recipientRow of [...groups.keys()].sort(byBytes)) {
      const g = groups.get(recipientRow) as { rows: NewEnvelopeRow[]; dropped: DroppedEnvelopeRow[] };
      let lowest: string | undefined;
      let highest = '';
      // ids in the order given, each greater than the one before (a sender's, as it made them): none twice
      let increasing = true;
      for (const list of [g.rows, g.dropped]) {
        for (const r of list) {
          const id = r.message_id;
          if (id.length === 0 || id.indexOf(',') >= 0)
            throw new Error(`a message id the ledger cannot record: ${JSON.stringify(id)}`);
          if (id > highest) highest = id;
          else increasing = false;
          if (lowest === undefined || id < lowest) lowest = id;
        }
      }
      const mark = await this.#markFor(tx, recipientRow);
      let fresh: NewEnvelopeRow[];
      let freshDropped: NewEnvelopeRow[];
      if ((mark === undefined || (lowest as string) > mark) && increasing) {
        // all new (the usual send): nothing to look up, nothing twice
        fresh = g.rows;
        freshDropped = g.dropped.map((d) => ({ ...d, stream_seq: 0 }));
      } else {
        // some may be recorded: every id in a batch whose range meets theirs
        const recorded =
          mark !== undefined && (lowest as string) <= mark
            ? await this.#recorded(tx, recipientRow, lowest as string, highest)
            : new Map<string, Recorded>();
        fresh = [];
        for (const r of g.rows) {
          const there = recorded.get(r.message_id);
          if (there) {
            if (there.sender_row !== r.sender_row) throw new TakenByAnotherSender(r.message_id); // rolls all back
            ignored.push({ ...r, recorded_seq: there.seq });
            continue;
          }
          // the same id twice in one call: the second finds the first
          recorded.set(r.message_id, { sender_row: r.sender_row, seq: r.stream_seq });
          fresh.push(r);
        }
        freshDropped = [];
        for (const d of g.dropped) {
          const there = recorded.get(d.message_id);
          if (there) {
            if (there.sender_row !== d.sender_row) throw new TakenByAnotherSender(d.message_id);
            known.add(envelopeKey(recipientRow, d.message_id));
            continue;
          }
          recorded.set(d.message_id, { sender_row: d.sender_row, seq: 0 });
          freshDropped.push({ ...d, stream_seq: 0 });
        }
      }
      for (const batch of planBatches(fresh)) {
        const { id, bytes } = await this.#insertBatch(tx, batch, false);
        addChange(change, recipientRow, batch.length, bytes);
        for (const r of batch) {
          if (r.webhook) {
            hooks.push({
              recipient_row: recipientRow,
              message_id: r.message_id,
              accepted_at: r.accepted_at,
              batch_id: id,
              stream_seq: r.stream_seq,
            });
          }
        }
      }
      for (const batch of planBatches(freshDropped)) await this.#insertBatch(tx, batch, true);
      if (mark === undefined || highest > mark) await tx.run(RAISE_MARK, [recipientRow, highest]);
    }
    if (hooks.length > 0) await this.#webhooks.queueMany(tx, hooks);
    if (this.#totalsKept) await addToTotals(tx, change);
    return dropped.length > 0 ? { ignored, known } : { ignored };
  }

  /**
   * The greatest id recorded for the recipient (undefined: none yet). On PostgreSQL the
   * mark's row is locked (made if need be) until the transaction ends: two instances
   * recording for one recipient take turns, so neither misses the other's ids.
   */
  async #markFor(tx: Sql, recipientRow: string): Promise<string | undefined> {
    if (this.#sql.dialect === 'postgres') {
      const m = await tx.get<{ last_id: string }>(
        `INSERT INTO envelope_id_marks (recipient_row, last_id) VALUES (?, '')
         ON CONFLICT (recipient_row) DO UPDATE SET last_id = envelope_id_marks.last_id RETURNING last_id`,
        [recipientRow],
      );
      return m === undefined || m.last_id === '' ? undefined : m.last_id;
    }
    return (
      await tx.get<{ last_id: string }>('SELECT last_id FROM envelope_id_marks WHERE recipient_row = ?', [recipientRow])
    )?.last_id;
  }

  /** Inserts one batch (every row one recipient's and one sender's); `done`: dropped envelopes, never pending. */
  async #insertBatch(tx: Sql, batch: readonly NewEnvelopeRow[], done: boolean): Promise<{ id: number; bytes: number }> {
    const first = batch[0] as NewEnvelopeRow;
    const items = batchItems(batch);
    const made = await tx.get<{ id: number }>(INSERT_BATCH, [
      first.recipient_row,
      first.tenant_id,
      first.recipient_number,
      first.sender_row,
      first.sender_number,
      first.accepted_at,
      items.first_id,
      items.last_id,
      items.first_seq,
      items.last_seq,
      items.message_ids,
      items.seqs,
      items.sizes,
      done ? 0 : items.count,
      done ? 0 : items.bytes,
    ]);
    return { id: Number(made?.id), bytes: items.bytes };
  }

  /**
   * The recipient's pending envelopes after `afterSeq`, in stream order, at most `limit`.
   * Batches are read in order of their first sequence from the first that may straddle
   * `afterSeq` (BATCH_MAX_SEQ_SPREAD before it); batches of requests published at once
   * interleave, so an envelope is given out only once no batch not yet read can hold an
   * earlier one.
   */
  async pending(recipientRow: string, afterSeq: number, limit: number): Promise<EnvelopeRow[]> {
    const out: EnvelopeRow[] = [];
    if (limit <= 0) return out;
    let waiting: EnvelopeRow[] = [];
    let from: { seq: number; id: number } = { seq: afterSeq - BATCH_MAX_SEQ_SPREAD, id: 0 };
    for (;;) {
      const page = await this.#sql.all<PendingBatchRow & { first_seq: number }>(
        `SELECT ${this.#pendingFields()}, b.first_seq
         FROM envelope_batches b
         WHERE b.recipient_row = ? AND b.pending_count > 0 AND b.first_seq >= ? AND (b.first_seq > ? OR b.id > ?)
           AND b.last_seq > ?
         ORDER BY b.first_seq, b.id LIMIT ?`,
        [recipientRow, from.seq, from.seq, from.id, afterSeq, PENDING_PAGE],
      );
      for (const b of page) {
        for (const it of notDone(b)) if (it.stream_seq > afterSeq) waiting.push(rowOf(b, it, null));
      }
      const last = page.at(-1);
      // a batch not read yet begins at the last one's first sequence or later
      const bound = page.length < PENDING_PAGE || last === undefined ? Number.POSITIVE_INFINITY : last.first_seq;
      waiting.sort((x, y) => x.stream_seq - y.stream_seq);
      let k = 0;
      while (k < waiting.length && (waiting[k] as EnvelopeRow).stream_seq < bound && out.length < limit) {
        out.push(waiting[k] as EnvelopeRow);
        k++;
      }
      if (out.length >= limit || bound === Number.POSITIVE_INFINITY) return out;
      waiting = waiting.slice(k);
      from = { seq: (last as { first_seq: number }).first_seq, id: (last as BatchRow).id };
    }
  }

  /** The select list of a PendingBatchRow of batch `b`: its fields, items and done ids. */
  #pendingFields(): string {
    const agg = this.#sql.dialect === 'postgres' ? 'string_agg' : 'group_concat';
    return `${BATCH_FIELDS}, b.message_ids, b.seqs, b.sizes,
      (SELECT ${agg}(x.message_id, ',') FROM envelopes_done x WHERE x.batch_id = b.id) AS done_ids`;
  }

  /** Marks the envelope acknowledged and records the sender's receipt; false if it was already. */
  acknowledge(row: EnvelopeRow, now: number): Promise<boolean> {
    // a dropped envelope was done when it was accepted
    if (row.stream_seq === 0) return Promise.resolve(false);
    return this.#sql.transaction(async (tx) => {
      const change = await this.#markDone(tx, [row], now);
      if (change.size === 0) return false;
      if (this.#totalsKept) await addToTotals(tx, negated(change));
      await tx.run(
        'INSERT INTO receipts (tenant_id, sender_row, message_id, recipient_number, acked_at) VALUES (?, ?, ?, ?, ?)',
        [row.tenant_id, row.sender_row, row.message_id, row.recipient_number, now],
      );
      return true;
    });
  }

  /**
   * Marks envelopes done (those not done already) and takes them out of their batches'
   * pending counts; returns, per recipient, the count and bytes it marked.
   */
  async #markDone(
    tx: Sql,
    rows: ReadonlyArray<Pick<EnvelopeRow, 'recipient_row' | 'message_id' | 'batch_id' | 'size' | 'stream_seq'>>,
    now: number,
  ): Promise<TotalsChange> {
    const change: TotalsChange = new Map();
    const perBatch = new Map<number, { count: number; bytes: number }>();
    for (const r of rows) {
      if (r.stream_seq === 0) continue;
      const added = await tx.run(
        'INSERT INTO envelopes_done (batch_id, message_id, done_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
        [r.batch_id, r.message_id, now],
      );
      if (added !== 1) continue;
      addChange(change, r.recipient_row, 1, r.size);
      addChange(perBatch, r.batch_id, 1, r.size);
    }
    for (const [id, t] of perBatch) {
      await tx.run(
        'UPDATE envelope_batches SET pending_count = pending_count - ?, pending_bytes = pending_bytes - ? WHERE id = ?',
        [t.count, t.bytes, id],
      );
    }
    return change;
  }

  /**
   * Marks pending envelopes done, with no receipt, because the stream no longer holds them
   * (its max age): nobody can read them any more, and as pending rows they would hold their
   * recipient's quota and stop a reader's pages for good. Returns, per
   * recipient, the count and bytes this marked (rows done already are left as they are).
   */
  expire(
    rows: ReadonlyArray<Pick<EnvelopeRow, 'recipient_row' | 'message_id' | 'batch_id' | 'size' | 'stream_seq'>>,
    now: number,
  ): Promise<TotalsChange> {
    return this.#sql.transaction(async (tx) => {
      const change = await this.#markDone(tx, rows, now);
      if (this.#totalsKept) await addToTotals(tx, negated(change));
      return change;
    });
  }

  /**
   * `expire` for every pending envelope of the recipient below `firstSeq`, the first
   * sequence its stream still holds.
   */
  expireBelow(recipientRow: string, firstSeq: number, now: number): Promise<TotalsChange> {
    return this.#sql.transaction(async (tx) => {
      const batches = await tx.all<PendingBatchRow>(
        `SELECT ${this.#pendingFields()}
         FROM envelope_batches b WHERE b.recipient_row = ? AND b.pending_count > 0 AND b.first_seq < ?`,
        [recipientRow, firstSeq],
      );
      const gone: EnvelopeRow[] = [];
      for (const b of batches) {
        for (const it of notDone(b)) if (it.stream_seq > 0 && it.stream_seq < firstSeq) gone.push(rowOf(b, it, null));
      }
      const change = await this.#markDone(tx, gone, now);
      if (this.#totalsKept) await addToTotals(tx, negated(change));
      return change;
    });
  }

  receipts(senderRow: string, afterId: number, limit: number): Promise<ReceiptRow[]> {
    return this.#sql.all<ReceiptRow>(
      'SELECT id, message_id, recipient_number, acked_at FROM receipts WHERE sender_row = ? AND id > ? ORDER BY id LIMIT ?',
      [senderRow, afterId, limit],
    );
  }

  /** Drops the index of a revoked incarnation (its envelopes were purged from the stream). */
  async forgetRecipient(recipientRow: string): Promise<void> {
    await this.#sql.transaction(async (tx) => {
      // their acknowledgements and webhook deliveries go with them (foreign keys, ON DELETE CASCADE)
      await tx.run('DELETE FROM envelope_batches WHERE recipient_row = ?', [recipientRow]);
      await tx.run('DELETE FROM envelope_id_marks WHERE recipient_row = ?', [recipientRow]);
      if (this.#totalsKept) await tx.run('DELETE FROM pending_totals WHERE recipient_row = ?', [recipientRow]);
    });
  }
}

/** The envelopes of a stored batch not acknowledged or expired, in the order it recorded them. */
function notDone(b: PendingBatchRow): BatchItem[] {
  const items = readItems(b);
  if (b.done_ids === null) return items;
  const done = new Set(b.done_ids.split(','));
  return items.filter((it) => !done.has(it.message_id));
}

/** An envelope of a stored batch as a row. */
function rowOf(b: BatchRow, it: BatchItem, ackedAt: number | null): EnvelopeRow {
  return {
    recipient_row: b.recipient_row,
    message_id: it.message_id,
    tenant_id: b.tenant_id,
    recipient_number: b.recipient_number,
    sender_row: b.sender_row,
    sender_number: b.sender_number,
    stream_seq: it.stream_seq,
    size: it.size,
    accepted_at: b.accepted_at,
    acked_at: ackedAt,
    batch_id: b.id,
  };
}

class TakenByAnotherSender extends Error {
  constructor(readonly messageId: string) {
    super('message id taken by another sender');
    this.name = 'TakenByAnotherSender';
  }
}
