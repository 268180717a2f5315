/** The pending-envelope index and delivery receipts (migration 003). */
import type { Ledger } from './ledger.js';
import type { Dialect, Sql, SqlValue } from './sql.js';
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
}

/** An envelope to record; `webhook`: also queue a webhook delivery (migration 005) in the same transaction. */
export type NewEnvelopeRow = Omit<EnvelopeRow, 'acked_at'> & { webhook?: boolean };

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
 * (acknowledged, no stream copy, sequence 0), so that its id is taken like any other: a
 * retry is a duplicate, and the same id is not delivered after an unblock.
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

/** Rows per INSERT: 9 parameters each, far below either database's limit. */
const INSERT_CHUNK = 500;

/** What an insert does with a row already there (the key: recipient row and message id). */
const ON_CONFLICT = {
  /** leaves it as it is */
  keep: 'ON CONFLICT DO NOTHING',
  /** leaves it as it is when the same sender's; another sender's fails the statement (#insertAlone) */
  keepOwn: `ON CONFLICT (recipient_row, message_id) DO UPDATE SET sender_row = NULL
        WHERE envelopes.sender_row <> excluded.sender_row`,
} as const;

const ADD_TO_TOTALS = 'INSERT INTO pending_totals (recipient_row, pending_count, pending_bytes)';
const ADDED_TO_TOTALS = `ON CONFLICT (recipient_row) DO UPDATE SET
  pending_count = pending_totals.pending_count + excluded.pending_count,
  pending_bytes = pending_totals.pending_bytes + excluded.pending_bytes`;

const COLUMNS =
  'recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at';

/** What the rows of one request's envelopes to one recipient have in common (all but message id, sequence and size). */
const SHARED = [
  'recipient_row',
  'tenant_id',
  'recipient_number',
  'sender_row',
  'sender_number',
  'accepted_at',
] as const;

const shareAll = (rows: readonly NewEnvelopeRow[]): boolean => {
  const first = rows[0];
  return first !== undefined && rows.every((r) => SHARED.every((c) => r[c] === first[c]));
};

/** The texts of inserts, written once per form and number of rows (each is also the prepared-statement cache's key). */
const insertTexts = new Map<string, string>();

/** PostgreSQL's insert of any number of rows, given as one JSON parameter, for each ON_CONFLICT form. */
const JSON_ROWS = `SELECT ${COLUMNS}
      FROM jsonb_to_recordset(?::jsonb) AS r(recipient_row text, message_id text, tenant_id text, recipient_number text,
        sender_row text, sender_number text, stream_seq bigint, size bigint, accepted_at bigint)`;
const JSON_INSERT: Record<keyof typeof ON_CONFLICT, string> = {
  keep: `INSERT INTO envelopes (${COLUMNS}) ${JSON_ROWS} ${ON_CONFLICT.keep}`,
  keepOwn: `INSERT INTO envelopes (${COLUMNS}) ${JSON_ROWS} ${ON_CONFLICT.keepOwn}`,
};

/**
 * An insert of these rows and its values.
 * - PostgreSQL: the rows as one JSON parameter, so that the text is the same for any number
 *   of rows and each connection prepares it once (postgres.ts). As a multi-row VALUES its
 *   text changed with the number of rows, and parsing and planning it cost more than running
 *   it (bench:ledger).
 * - SQLite, rows that share all but their message id, sequence and size (one request's
 *   envelopes to one recipient: the usual send): the shared values are bound once, and each
 *   row binds only its own three. better-sqlite3 copies every string it binds, and binding
 *   the same five strings (two of them UUIDs) again for every row cost 0.2–0.9 µs per row
 *   (bench:ledger, five runs of each: 4.2–4.9 µs per row, 3.8–4.2 now).
 * - SQLite otherwise: one tuple of nine values per row.
 */
function envelopeInsert(
  dialect: Dialect,
  rows: readonly NewEnvelopeRow[],
  onConflict: keyof typeof ON_CONFLICT,
): { text: string; values: SqlValue[] } {
  if (dialect === 'postgres') return { text: JSON_INSERT[onConflict], values: [JSON.stringify(rows)] };
  const shared = rows.length > 1 && shareAll(rows);
  const key = `${shared ? 'shared' : 'rows'} ${onConflict} ${rows.length}`;
  let text = insertTexts.get(key);
  if (text === undefined) {
    text = shared
      ? `INSERT INTO envelopes (${COLUMNS})
      SELECT s.column1, r.column1, s.column2, s.column3, s.column4, s.column5, r.column2, r.column3, s.column6
      FROM (VALUES (?, ?, ?, ?, ?, ?)) AS s, (VALUES ${Array.from({ length: rows.length }, () => '(?, ?, ?)').join(', ')}) AS r
      WHERE true ${ON_CONFLICT[onConflict]}`
      : `INSERT INTO envelopes (${COLUMNS})
      VALUES ${Array.from({ length: rows.length }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')} ${ON_CONFLICT[onConflict]}`;
    insertTexts.set(key, text);
  }
  const values: SqlValue[] = [];
  if (shared) {
    const s = rows[0] as NewEnvelopeRow;
    values.push(s.recipient_row, s.tenant_id, s.recipient_number, s.sender_row, s.sender_number, s.accepted_at);
    for (const r of rows) values.push(r.message_id, r.stream_seq, r.size);
    return { text, values };
  }
  for (const r of rows) values.push(...rowValues(r));
  return { text, values };
}

/** A row's values in the order of COLUMNS. */
function rowValues(r: NewEnvelopeRow): SqlValue[] {
  return [
    r.recipient_row,
    r.message_id,
    r.tenant_id,
    r.recipient_number,
    r.sender_row,
    r.sender_number,
    r.stream_seq,
    r.size,
    r.accepted_at,
  ];
}

/**
 * PostgreSQL's usual send insert: envelopeInsert's `keepOwn` that also adds the rows it created
 * to their recipients' pending totals (migration 010) and returns how many it created as
 * `n`. Totals rows are locked in recipient order (bytewise, as JavaScript sorts them in
 * addToTotals), so two writers never wait on each other in a circle.
 */
const COUNTED_INSERT = `WITH created AS (${JSON_INSERT.keepOwn} RETURNING recipient_row, size),
  counted AS (${ADD_TO_TOTALS} SELECT recipient_row, count(*), sum(size) FROM created
    GROUP BY recipient_row ORDER BY recipient_row COLLATE "C" ${ADDED_TO_TOTALS})
  SELECT count(*) AS n FROM created`;

/** Changes to recipients' pending totals (PostgreSQL, migration 010): recipient row → count and bytes to add. */
export type TotalsChange = Map<string, { count: number; bytes: number }>;

function addChange(change: TotalsChange, recipientRow: string, count: number, bytes: number): void {
  const t = change.get(recipientRow) ?? { count: 0, bytes: 0 };
  t.count += count;
  t.bytes += bytes;
  change.set(recipientRow, t);
}

const negated = (change: TotalsChange): TotalsChange =>
  new Map([...change].map(([row, t]) => [row, { count: -t.count, bytes: -t.bytes }]));

/** Adds (or, negative, takes out) each recipient's change to its pending totals, in recipient order. */
async function addToTotals(q: Sql, change: TotalsChange): Promise<void> {
  if (change.size === 0) return;
  const rows = [...change].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  await q.run(
    `${ADD_TO_TOTALS} VALUES ${rows.map(() => '(?, ?, ?)').join(', ')} ${ADDED_TO_TOTALS}`,
    rows.flatMap(([row, t]) => [row, t.count, t.bytes]),
  );
}

/** SQLite's or PostgreSQL's NOT NULL violation (how #insertAlone learns that another sender holds an id). */
const isNotNullViolation = (err: unknown): boolean => {
  const code = (err as { code?: string }).code;
  return code === 'SQLITE_CONSTRAINT_NOTNULL' || code === '23502';
};

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

  /** PostgreSQL keeps each recipient's pending totals in a row (migration 010); SQLite counts its envelopes. */
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

  /** Count and bytes of the recipient's unacknowledged envelopes. */
  async pendingTotals(recipientRow: string): Promise<{ count: number; bytes: number }> {
    const r = await this.#sql.get<{ count: number; bytes: number }>(
      this.#totalsKept
        ? 'SELECT pending_count AS count, pending_bytes AS bytes FROM pending_totals WHERE recipient_row = ?'
        : 'SELECT count(*) AS count, coalesce(sum(size), 0) AS bytes FROM envelopes WHERE recipient_row = ? AND acked_at IS NULL',
      [recipientRow],
    );
    return r ?? { count: 0, bytes: 0 };
  }

  /** For each of these message ids already recorded for the recipient: who sent it. One query per batch. */
  async existingSenders(recipientRow: string, messageIds: string[]): Promise<Map<string, string>> {
    const ids =
      this.#sql.dialect === 'postgres'
        ? 'SELECT jsonb_array_elements_text(?::jsonb)'
        : 'SELECT value FROM json_each(?)';
    const rows = await this.#sql.all<{ message_id: string; sender_row: string }>(
      `SELECT message_id, sender_row FROM envelopes WHERE recipient_row = ? AND message_id IN (${ids})`,
      [recipientRow, JSON.stringify(messageIds)],
    );
    return new Map(rows.map((r) => [r.message_id, r.sender_row]));
  }

  find(recipientRow: string, messageId: string, q: Sql = this.#sql): Promise<EnvelopeRow | undefined> {
    return q.get<EnvelopeRow>('SELECT * FROM envelopes WHERE recipient_row = ? AND message_id = ?', [
      recipientRow,
      messageId,
    ]);
  }

  /**
   * Records accepted envelopes in one transaction; rows already present from the same
   * sender are kept as they are. A row present from another sender (another relay
   * instance got there first) records nothing and returns that row's message id.
   * A new row marked `webhook` gets its webhook delivery queued in the same transaction.
   * The key (recipient, message id) is the primary key: of two instances inserting it at
   * once, PostgreSQL makes the second wait for the first and then find its row.
   * Each row's stream_seq is its own publish's: no row recorded already points at it.
   */
  async insertMany(rows: NewEnvelopeRow[], dropped: DroppedEnvelopeRow[] = []): Promise<InsertOutcome> {
    if (dropped.length === 0 && rows.length <= INSERT_CHUNK && !rows.some((r) => r.webhook)) {
      const alone = await this.#insertAlone(rows);
      if (alone) return alone;
    }
    try {
      return await this.#sql.transaction(async (tx) => {
        const ignored = rows.length > 0 ? await this.#insertMany(tx, rows) : [];
        return dropped.length > 0 ? { ignored, known: await this.#recordDropped(tx, dropped) } : { ignored };
      });
    } catch (err) {
      if (err instanceof TakenByAnotherSender) return { conflict: err.messageId };
      throw err;
    }
  }

  /** Records dropped envelopes as done; returns the keys of those the ledger had already (same sender). */
  async #recordDropped(tx: Sql, dropped: DroppedEnvelopeRow[]): Promise<Set<string>> {
    const known = new Set<string>();
    for (const r of dropped) {
      const added = await tx.run(
        `INSERT INTO envelopes (${COLUMNS}, acked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (recipient_row, message_id) DO NOTHING`,
        [...rowValues({ ...r, stream_seq: 0 }), r.accepted_at],
      );
      if (added === 1) continue;
      const there = await this.find(r.recipient_row, r.message_id, tx);
      if (there?.sender_row !== r.sender_row) throw new TakenByAnotherSender(r.message_id); // rolls all back
      known.add(envelopeKey(r.recipient_row, r.message_id));
    }
    return known;
  }

  /**
   * The usual send in one statement, with no transaction around it (one round trip to the
   * ledger): new rows are inserted; a row already there from the
   * same sender is left as it is; a row there from another sender fails the whole statement
   * (its sender would become NULL), which then records nothing, and undefined sends the
   * batch the long way, which names the message id. When fewer rows changed than were
   * given, the others were there already (a retry): each is looked up for the sequence it
   * points at, which is never this request's own (each publish has its own sequence).
   */
  async #insertAlone(rows: NewEnvelopeRow[]): Promise<InsertOutcome | undefined> {
    let changed: number;
    try {
      if (this.#totalsKept) {
        changed = (await this.#sql.get<{ n: number }>(COUNTED_INSERT, [JSON.stringify(rows)]))?.n ?? 0;
      } else {
        const { text, values } = envelopeInsert(this.#sql.dialect, rows, 'keepOwn');
        changed = await this.#sql.run(text, values);
      }
    } catch (err) {
      if (isNotNullViolation(err)) return undefined;
      throw err;
    }
    const ignored: IgnoredRow[] = [];
    if (changed === rows.length) return { ignored };
    for (const r of rows) {
      // rows are never pointed elsewhere: what is found now is what the statement found
      const there = await this.find(r.recipient_row, r.message_id);
      if (there !== undefined && there.stream_seq !== r.stream_seq) {
        ignored.push({ ...r, recorded_seq: there.stream_seq });
      }
    }
    return { ignored };
  }

  /**
   * One multi-row INSERT per chunk, not one statement per envelope: on PostgreSQL each
   * statement is a round trip. Usually every row is new, which the count of rows changed
   * says without RETURNING or a look-up first. When some were there already (a retry, or
   * another instance got there first: rare) the chunk is undone to its savepoint and
   * inserted again with RETURNING, which names the rows this insert created; the others
   * are looked up one by one.
   */
  async #insertMany(tx: Sql, rows: NewEnvelopeRow[]): Promise<IgnoredRow[]> {
    const ignored: IgnoredRow[] = [];
    const created: NewEnvelopeRow[] = [];
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.length <= INSERT_CHUNK ? rows : rows.slice(i, i + INSERT_CHUNK);
      const { text: insert, values } = envelopeInsert(this.#sql.dialect, chunk, 'keep');
      await tx.exec('SAVEPOINT envelopes_chunk');
      if ((await tx.run(insert, values)) === chunk.length) {
        for (const r of chunk) created.push(r);
        continue;
      }
      await tx.exec('ROLLBACK TO SAVEPOINT envelopes_chunk');
      const inserted = await tx.all<{ recipient_row: string; message_id: string }>(
        `${insert} RETURNING recipient_row, message_id`,
        values,
      );
      const made = new Set(inserted.map((r) => envelopeKey(r.recipient_row, r.message_id)));
      for (const r of chunk) {
        if (made.delete(envelopeKey(r.recipient_row, r.message_id))) {
          created.push(r);
          continue;
        }
        const there = await this.find(r.recipient_row, r.message_id, tx);
        if (there?.sender_row !== r.sender_row) throw new TakenByAnotherSender(r.message_id); // rolls the whole batch back
        ignored.push({ ...r, recorded_seq: there.stream_seq });
      }
    }
    const hooks = created.filter((r) => r.webhook);
    if (hooks.length > 0) await this.#webhooks.queueMany(tx, hooks);
    if (this.#totalsKept) {
      const change: TotalsChange = new Map();
      for (const r of created) addChange(change, r.recipient_row, 1, r.size);
      await addToTotals(tx, change);
    }
    return ignored;
  }

  pending(recipientRow: string, afterSeq: number, limit: number): Promise<EnvelopeRow[]> {
    return this.#sql.all<EnvelopeRow>(
      'SELECT * FROM envelopes WHERE recipient_row = ? AND acked_at IS NULL AND stream_seq > ? ORDER BY stream_seq LIMIT ?',
      [recipientRow, afterSeq, limit],
    );
  }

  /** Marks the envelope acknowledged and records the sender's receipt; false if it was already. */
  acknowledge(row: EnvelopeRow, now: number): Promise<boolean> {
    return this.#sql.transaction(async (tx) => {
      const changed = await tx.run(
        'UPDATE envelopes SET acked_at = ? WHERE recipient_row = ? AND message_id = ? AND acked_at IS NULL',
        [now, row.recipient_row, row.message_id],
      );
      if (changed !== 1) return false;
      if (this.#totalsKept) await addToTotals(tx, new Map([[row.recipient_row, { count: -1, bytes: -row.size }]]));
      await tx.run(
        'INSERT INTO receipts (tenant_id, sender_row, message_id, recipient_number, acked_at) VALUES (?, ?, ?, ?, ?)',
        [row.tenant_id, row.sender_row, row.message_id, row.recipient_number, now],
      );
      return true;
    });
  }

  /**
   * Marks pending envelopes done, with no receipt, because the stream no longer holds them
   * (its max age): nobody can read them any more, and as pending rows they would hold their
   * recipient's quota and stop a reader's pages for good. Returns, per
   * recipient, the count and bytes this marked (rows done already are left as they are).
   */
  expire(rows: ReadonlyArray<Pick<EnvelopeRow, 'recipient_row' | 'message_id'>>, now: number): Promise<TotalsChange> {
    return this.#sql.transaction(async (tx) => {
      const change: TotalsChange = new Map();
      for (const r of rows) {
        const done = await tx.all<{ size: number }>(
          'UPDATE envelopes SET acked_at = ? WHERE recipient_row = ? AND message_id = ? AND acked_at IS NULL RETURNING size',
          [now, r.recipient_row, r.message_id],
        );
        for (const d of done) addChange(change, r.recipient_row, 1, Number(d.size));
      }
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
      const done = await tx.all<{ size: number }>(
        'UPDATE envelopes SET acked_at = ? WHERE recipient_row = ? AND acked_at IS NULL AND stream_seq < ? RETURNING size',
        [now, recipientRow, firstSeq],
      );
      const change: TotalsChange = new Map();
      for (const d of done) addChange(change, recipientRow, 1, Number(d.size));
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
      await tx.run('DELETE FROM envelopes WHERE recipient_row = ?', [recipientRow]);
      if (this.#totalsKept) await tx.run('DELETE FROM pending_totals WHERE recipient_row = ?', [recipientRow]);
    });
  }
}

class TakenByAnotherSender extends Error {
  constructor(readonly messageId: string) {
    super('message id taken by another sender');
    this.name = 'TakenByAnotherSender';
  }
}
