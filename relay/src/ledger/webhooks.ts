/**
 * The webhook delivery queue (migrations 005, 013). Rows are queued by MessageStore.insertMany
 * in the envelope's transaction; the dispatcher (src/webhooks/) claims due rows, and
 * records each attempt's outcome here.
 */
import { randomBytes } from 'node:crypto';
import type { Ledger } from './ledger.js';
import type { Sql, SqlValue } from './sql.js';

export type DeliveryState = 'pending' | 'delivered' | 'gave_up' | 'cancelled';

export interface DeliveryRow {
  id: string;
  recipient_row: string;
  message_id: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: number | null;
  last_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

/** A due delivery with what the dispatcher needs to build the request. */
export interface DueDelivery {
  id: string;
  recipient_row: string;
  message_id: string;
  attempts: number;
  tenant_id: string;
  agent_id: string;
  stream_seq: number;
  accepted_at: number;
  acked_at: number | null;
  /** tenant, agent ids of recipient and sender: whether the recipient muted the sender */
  sender_agent_id: string;
}

export const newWebhookEventId = (): string => `evt_${randomBytes(16).toString('base64url')}`;

const heldBy = (attempt: number | undefined): string => (attempt === undefined ? '' : ' AND attempts = ?');
const withAttempt = (params: SqlValue[], attempt: number | undefined): SqlValue[] =>
  attempt === undefined ? params : [...params, attempt];

const QUEUE_CHUNK = 500;
const QUEUE_INSERT =
  'INSERT INTO webhook_deliveries (id, recipient_row, message_id, batch_id, stream_seq, state, attempts, next_attempt_at, created_at, updated_at)';
const QUEUE_JSON = `${QUEUE_INSERT}
  SELECT id, recipient_row, message_id, batch_id, stream_seq, 'pending', 0, at, at, at
  FROM jsonb_to_recordset(?::jsonb) AS r(id text, recipient_row text, message_id text, batch_id bigint, stream_seq bigint, at bigint)
  ON CONFLICT DO NOTHING`;

/** An envelope to deliver: its key, the batch that records it (migration 013) and its stream copy. */
export interface NewDelivery {
  recipient_row: string;
  message_id: string;
  accepted_at: number;
  batch_id: number;
  stream_seq: number;
}

export class WebhookStore {
  readonly #ledger: Ledger;

  constructor(ledger: Ledger) {
    this.#ledger = ledger;
  }

  get #sql() {
    return this.#ledger.sql;
  }

  /**
   * Queues a delivery per envelope, in one statement per chunk. Only inside the transaction
   * that records the envelopes (MessageStore.insertMany), whose `tx` it is given.
   */
  async queueMany(tx: Sql, envelopes: readonly NewDelivery[]): Promise<void> {
    if (this.#sql.dialect === 'postgres') {
      // one JSON parameter, one text for any number (prepared once per connection, as the envelopes' insert)
      await tx.run(QUEUE_JSON, [
        JSON.stringify(
          envelopes.map((e) => ({
            id: newWebhookEventId(),
            recipient_row: e.recipient_row,
            message_id: e.message_id,
            batch_id: e.batch_id,
            stream_seq: e.stream_seq,
            at: e.accepted_at,
          })),
        ),
      ]);
      return;
    }
    for (let i = 0; i < envelopes.length; i += QUEUE_CHUNK) {
      const chunk = envelopes.slice(i, i + QUEUE_CHUNK);
      const values: SqlValue[] = [];
      for (const e of chunk) {
        values.push(
          newWebhookEventId(),
          e.recipient_row,
          e.message_id,
          e.batch_id,
          e.stream_seq,
          e.accepted_at,
          e.accepted_at,
          e.accepted_at,
        );
      }
      await tx.run(
        `${QUEUE_INSERT} VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)").join(', ')} ON CONFLICT DO NOTHING`,
        values,
      );
    }
  }

  /**
   * True while the first webhook attempt for an envelope has not finished: the envelope's
   * stream copy must stay for it even once acknowledged (the first attempt always goes out;
   * the dispatcher tidies the copy afterwards).
   */
  async firstAttemptPending(recipientRow: string, messageId: string): Promise<boolean> {
    return (
      (await this.#sql.get(
        `SELECT 1 FROM webhook_deliveries WHERE recipient_row = ? AND message_id = ? AND state = 'pending'
           AND (attempts = 0 OR (attempts = 1 AND last_status IS NULL AND last_error IS NULL))`,
        [recipientRow, messageId],
      )) !== undefined
    );
  }

  /** Pending rows due at `now`, oldest first (a row leased by an instance is due again when its lease ends). */
  due(now: number, limit: number): Promise<DueDelivery[]> {
    return this.#sql.all<DueDelivery>(
      `SELECT d.id, d.recipient_row, d.message_id, d.attempts, b.tenant_id, a.agent_id, d.stream_seq,
         b.accepted_at, x.done_at AS acked_at, s.agent_id AS sender_agent_id
       FROM webhook_deliveries d
       JOIN envelope_batches b ON b.id = d.batch_id
       LEFT JOIN envelopes_done x ON x.batch_id = d.batch_id AND x.message_id = d.message_id
       JOIN agents a ON a.id = d.recipient_row
       JOIN agents s ON s.id = b.sender_row
       WHERE d.state = 'pending' AND d.next_attempt_at <= ?
       ORDER BY d.next_attempt_at LIMIT ?`,
      [now, limit],
    );
  }

  /**
   * Starts an attempt: counts it and moves next_attempt_at to `leaseUntil` (the lease), so
   * a relay that dies during the request has its delivery taken over after the lease.
   * Only a row still due is claimed: of two instances claiming one row at once, one
   * changes it and the other finds it leased. False if the row is not pending and due.
   */
  async claim(id: string, now: number, leaseUntil: number): Promise<boolean> {
    return (
      (await this.#sql.run(
        `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ?, updated_at = ?
         WHERE id = ? AND state = 'pending' AND next_attempt_at <= ?`,
        [leaseUntil, now, now, id, now],
      )) === 1
    );
  }

  /**
   * Undoes a claim whose request was abandoned (relay closing): not counted, due again now.
   * `attempt` (here and below): the attempt number the caller claimed; its outcome is
   * recorded only while the row is still at that attempt, so an instance that outlived its
   * lease never overwrites the attempt of the instance that took the row over.
   */
  async release(id: string, now: number, attempt?: number): Promise<void> {
    await this.#sql.run(
      `UPDATE webhook_deliveries SET attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,
         next_attempt_at = ?, updated_at = ?
       WHERE id = ? AND state = 'pending'${heldBy(attempt)}`,
      withAttempt([now, now, id], attempt),
    );
  }

  /** Records an attempt that will be retried at `nextAt`. */
  async retryAt(
    id: string,
    nextAt: number,
    now: number,
    status: number | null,
    error: string | null,
    attempt?: number,
  ): Promise<void> {
    await this.#sql.run(
      `UPDATE webhook_deliveries SET next_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ?
       WHERE id = ? AND state = 'pending'${heldBy(attempt)}`,
      withAttempt([nextAt, status, error, now, id], attempt),
    );
  }

  /** Records a final outcome. */
  async finish(
    id: string,
    state: Exclude<DeliveryState, 'pending'>,
    now: number,
    status: number | null,
    error: string | null,
    attempt?: number,
  ): Promise<void> {
    await this.#sql.run(
      `UPDATE webhook_deliveries SET state = ?, next_attempt_at = NULL, last_status = ?, last_error = ?, updated_at = ?
       WHERE id = ? AND state = 'pending'${heldBy(attempt)}`,
      withAttempt([state, status, error, now, id], attempt),
    );
  }

  /** Endpoint and secret of the incarnation, read at each attempt (a rotated secret applies at once). */
  target(recipientRow: string): Promise<{ endpoint_url: string; webhook_secret: string } | undefined> {
    return this.#sql.get(
      `SELECT p.endpoint_url, p.webhook_secret FROM agent_profiles p JOIN agents a ON a.id = p.agent_row
       WHERE p.agent_row = ? AND a.revoked_at IS NULL AND p.webhook_secret IS NOT NULL`,
      [recipientRow],
    );
  }

  /** Whether the envelope of a delivery is acknowledged now. */
  async acked(recipientRow: string, messageId: string): Promise<boolean> {
    return (
      (await this.#sql.get(
        `SELECT 1 FROM webhook_deliveries d JOIN envelopes_done x ON x.batch_id = d.batch_id AND x.message_id = d.message_id
         WHERE d.recipient_row = ? AND d.message_id = ?`,
        [recipientRow, messageId],
      )) !== undefined
    );
  }

  get(id: string): Promise<DeliveryRow | undefined> {
    return this.#sql.get<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE id = ?', [id]);
  }

  forMessage(recipientRow: string, messageId: string): Promise<DeliveryRow | undefined> {
    return this.#sql.get<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE recipient_row = ? AND message_id = ?', [
      recipientRow,
      messageId,
    ]);
  }
}
