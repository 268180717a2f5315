/**
 * The webhook delivery queue (migration 005). Rows are queued by MessageStore.insertMany
 * in the envelope's transaction; the dispatcher (src/webhooks/) claims due rows, and
 * records each attempt's outcome here.
 */
import { randomBytes } from 'node:crypto';
import type { Ledger } from './ledger.js';

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

export class WebhookStore {
  readonly #ledger: Ledger;
  readonly #queue;

  constructor(ledger: Ledger) {
    this.#ledger = ledger;
    this.#queue = ledger.db.prepare(
      `INSERT OR IGNORE INTO webhook_deliveries (id, recipient_row, message_id, state, attempts, next_attempt_at, created_at, updated_at)
       VALUES (?, ?, ?, 'pending', 0, ?, ?, ?)`,
    );
  }

  /**
   * Queues a delivery. Only inside the transaction that records the envelope
   * (MessageStore.insertMany), which guards it.
   */
  queue(recipientRow: string, messageId: string, now: number): void {
    this.#queue.run(newWebhookEventId(), recipientRow, messageId, now, now, now);
  }

  /** True when the incarnation has a webhook endpoint (and so a secret). */
  hasEndpoint(agentRow: string): boolean {
    return this.#ledger.guarded(
      () =>
        this.#ledger
          .stmt('SELECT 1 FROM agent_profiles WHERE agent_row = ? AND webhook_secret IS NOT NULL')
          .get(agentRow) !== undefined,
    );
  }

  /**
   * True while the first webhook attempt for an envelope has not finished: the envelope's
   * stream copy must stay for it even once acknowledged (the first attempt always goes out;
   * the dispatcher tidies the copy afterwards).
   */
  firstAttemptPending(recipientRow: string, messageId: string): boolean {
    return this.#ledger.guarded(
      () =>
        this.#ledger
          .stmt(
            `SELECT 1 FROM webhook_deliveries WHERE recipient_row = ? AND message_id = ? AND state = 'pending'
               AND (attempts = 0 OR (attempts = 1 AND last_status IS NULL AND last_error IS NULL))`,
          )
          .get(recipientRow, messageId) !== undefined,
    );
  }

  /** Pending rows due at `now`, oldest first. */
  due(now: number, limit: number): DueDelivery[] {
    return this.#ledger.guarded(
      () =>
        this.#ledger
          .stmt(
            `SELECT d.id, d.recipient_row, d.message_id, d.attempts, e.tenant_id, a.agent_id, e.stream_seq,
               e.accepted_at, e.acked_at, s.agent_id AS sender_agent_id
             FROM webhook_deliveries d
             JOIN envelopes e ON e.recipient_row = d.recipient_row AND e.message_id = d.message_id
             JOIN agents a ON a.id = d.recipient_row
             JOIN agents s ON s.id = e.sender_row
             WHERE d.state = 'pending' AND d.next_attempt_at <= ?
             ORDER BY d.next_attempt_at LIMIT ?`,
          )
          .all(now, limit) as DueDelivery[],
    );
  }

  /**
   * Starts an attempt: counts it and moves next_attempt_at to `leaseUntil`, so a relay
   * that dies during the request retries it after the lease. False if the row is no
   * longer pending.
   */
  claim(id: string, now: number, leaseUntil: number): boolean {
    return this.#ledger.guarded(
      () =>
        this.#ledger
          .stmt(
            `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ?, updated_at = ?
             WHERE id = ? AND state = 'pending'`,
          )
          .run(leaseUntil, now, now, id).changes === 1,
    );
  }

  /** Undoes a claim whose request was abandoned (relay closing): not counted, due again now. */
  release(id: string, now: number): void {
    this.#ledger.guarded(() =>
      this.#ledger
        .stmt(
          `UPDATE webhook_deliveries SET attempts = max(attempts - 1, 0), next_attempt_at = ?, updated_at = ?
           WHERE id = ? AND state = 'pending'`,
        )
        .run(now, now, id),
    );
  }

  /** Records an attempt that will be retried at `nextAt`. */
  retryAt(id: string, nextAt: number, now: number, status: number | null, error: string | null): void {
    this.#ledger.guarded(() =>
      this.#ledger
        .stmt(
          `UPDATE webhook_deliveries SET next_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ?
           WHERE id = ? AND state = 'pending'`,
        )
        .run(nextAt, status, error, now, id),
    );
  }

  /** Records a final outcome. */
  finish(
    id: string,
    state: Exclude<DeliveryState, 'pending'>,
    now: number,
    status: number | null,
    error: string | null,
  ): void {
    this.#ledger.guarded(() =>
      this.#ledger
        .stmt(
          `UPDATE webhook_deliveries SET state = ?, next_attempt_at = NULL, last_status = ?, last_error = ?, updated_at = ?
           WHERE id = ? AND state = 'pending'`,
        )
        .run(state, status, error, now, id),
    );
  }

  /** Endpoint and secret of the incarnation, read at each attempt (a rotated secret applies at once). */
  target(recipientRow: string): { endpoint_url: string; webhook_secret: string } | undefined {
    return this.#ledger.guarded(
      () =>
        this.#ledger
          .stmt(
            `SELECT p.endpoint_url, p.webhook_secret FROM agent_profiles p JOIN agents a ON a.id = p.agent_row
             WHERE p.agent_row = ? AND a.revoked_at IS NULL AND p.webhook_secret IS NOT NULL`,
          )
          .get(recipientRow) as { endpoint_url: string; webhook_secret: string } | undefined,
    );
  }

  /** Whether the envelope of a delivery is acknowledged now. */
  acked(recipientRow: string, messageId: string): boolean {
    return this.#ledger.guarded(
      () =>
        this.#ledger
          .stmt('SELECT 1 FROM envelopes WHERE recipient_row = ? AND message_id = ? AND acked_at IS NOT NULL')
          .get(recipientRow, messageId) !== undefined,
    );
  }

  get(id: string): DeliveryRow | undefined {
    return this.#ledger.guarded(
      () => this.#ledger.stmt('SELECT * FROM webhook_deliveries WHERE id = ?').get(id) as DeliveryRow | undefined,
    );
  }

  forMessage(recipientRow: string, messageId: string): DeliveryRow | undefined {
    return this.#ledger.guarded(
      () =>
        this.#ledger
          .stmt('SELECT * FROM webhook_deliveries WHERE recipient_row = ? AND message_id = ?')
          .get(recipientRow, messageId) as DeliveryRow | undefined,
    );
  }
}
