import type { Migration } from './types.js';

/**
 * Accepted envelopes are recorded a batch per row (one request's envelopes to one
 * recipient) instead of a row per envelope: see ledger/envelope-batches.ts.
 *
 * - `envelope_batches`: what the envelopes share, their ids, sequences and sizes as
 *   comma-separated lists, the batch's id and sequence ranges, and how many of them (and
 *   how many bytes) are still pending. Indexed by id range (finding an id) and, while any is
 *   pending, by first sequence (pending reads).
 * - `envelopes_done`: an envelope acknowledged or expired, by batch and message id. An
 *   envelope dropped for a block (stream sequence 0) is done when recorded and has no row.
 * - `envelope_id_marks`: the greatest message id recorded for each recipient. A send whose
 *   ids all sort after it (a sender's ids grow with time) cannot hold a duplicate and looks
 *   nothing up; on PostgreSQL its row is also the lock that keeps two instances from
 *   recording the same recipient's ids at once.
 * - `webhook_deliveries` point at their envelope's batch (cascading as they did from the
 *   envelope) and keep its stream sequence.
 *
 * Each existing envelope becomes a batch of its own (with a `envelopes_done` row when it
 * was acknowledged); PostgreSQL's pending totals are counted again from them. Ids compare bytewise (PostgreSQL: COLLATE "C"), as the relay's code
 * compares them. Depends on 003, 005, 010 (PostgreSQL) and 011 (SQLite).
 */
export const migration013: Migration = {
  version: 13,
  name: 'envelope-batches',
  withoutForeignKeys: true,
  up: `
    CREATE TABLE envelope_batches (
      id INTEGER PRIMARY KEY,
      recipient_row TEXT NOT NULL,
      tenant_id TEXT NOT NULL,
      recipient_number TEXT NOT NULL,
      sender_row TEXT NOT NULL,
      sender_number TEXT NOT NULL,
      accepted_at INTEGER NOT NULL,
      first_id TEXT NOT NULL,
      last_id TEXT NOT NULL,
      first_seq INTEGER NOT NULL,
      last_seq INTEGER NOT NULL,
      message_ids TEXT NOT NULL,
      seqs TEXT NOT NULL,
      sizes TEXT NOT NULL,
      pending_count INTEGER NOT NULL CHECK (pending_count >= 0),
      pending_bytes INTEGER NOT NULL CHECK (pending_bytes >= 0)
    ) STRICT;
    CREATE INDEX envelope_batches_ids ON envelope_batches(recipient_row, first_id, last_id);
    CREATE INDEX envelope_batches_pending ON envelope_batches(recipient_row, first_seq) WHERE pending_count > 0;
    CREATE TABLE envelopes_done (
      batch_id INTEGER NOT NULL REFERENCES envelope_batches(id) ON DELETE CASCADE,
      message_id TEXT NOT NULL,
      done_at INTEGER NOT NULL,
      PRIMARY KEY (batch_id, message_id)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE envelope_id_marks (
      recipient_row TEXT PRIMARY KEY,
      last_id TEXT NOT NULL
    ) STRICT, WITHOUT ROWID;

    INSERT INTO envelope_batches (recipient_row, tenant_id, recipient_number, sender_row, sender_number,
        accepted_at, first_id, last_id, first_seq, last_seq, message_ids, seqs, sizes, pending_count, pending_bytes)
      SELECT recipient_row, tenant_id, recipient_number, sender_row, sender_number, accepted_at,
        message_id, message_id, stream_seq, stream_seq, message_id, CAST(stream_seq AS TEXT), CAST(size AS TEXT),
        CASE WHEN acked_at IS NULL THEN 1 ELSE 0 END, CASE WHEN acked_at IS NULL THEN size ELSE 0 END
      FROM envelopes ORDER BY envelopes.recipient_row, envelopes.stream_seq;
    INSERT INTO envelopes_done (batch_id, message_id, done_at)
      SELECT b.id, e.message_id, e.acked_at FROM envelopes e
      JOIN envelope_batches b ON b.recipient_row = e.recipient_row AND b.first_id = e.message_id
      WHERE e.acked_at IS NOT NULL AND e.stream_seq > 0;
    INSERT INTO envelope_id_marks (recipient_row, last_id)
      SELECT recipient_row, max(message_id) FROM envelopes GROUP BY recipient_row;

    CREATE TABLE webhook_deliveries_rebuilt (
      id TEXT PRIMARY KEY CHECK (id GLOB 'evt_*'),
      recipient_row TEXT NOT NULL REFERENCES agents(id),
      message_id TEXT NOT NULL,
      batch_id INTEGER NOT NULL REFERENCES envelope_batches(id) ON DELETE CASCADE,
      stream_seq INTEGER NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'gave_up', 'cancelled')),
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      next_attempt_at INTEGER,
      last_attempt_at INTEGER,
      last_status INTEGER,
      last_error TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      UNIQUE (recipient_row, message_id),
      CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL))
    ) STRICT;
    INSERT INTO webhook_deliveries_rebuilt (id, recipient_row, message_id, batch_id, stream_seq, state, attempts,
        next_attempt_at, last_attempt_at, last_status, last_error, created_at, updated_at)
      SELECT d.id, d.recipient_row, d.message_id, b.id, b.first_seq, d.state, d.attempts,
        d.next_attempt_at, d.last_attempt_at, d.last_status, d.last_error, d.created_at, d.updated_at
      FROM webhook_deliveries d
      JOIN envelope_batches b ON b.recipient_row = d.recipient_row AND b.first_id = d.message_id;
    DROP TABLE webhook_deliveries;
    ALTER TABLE webhook_deliveries_rebuilt RENAME TO webhook_deliveries;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_batch ON webhook_deliveries(batch_id);
    DROP TABLE envelopes;
  `,
  postgres: `
    CREATE TABLE envelope_batches (
      id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      recipient_row TEXT NOT NULL,
      tenant_id TEXT NOT NULL,
      recipient_number TEXT NOT NULL,
      sender_row TEXT NOT NULL,
      sender_number TEXT NOT NULL,
      accepted_at BIGINT NOT NULL,
      first_id TEXT COLLATE "C" NOT NULL,
      last_id TEXT COLLATE "C" NOT NULL,
      first_seq BIGINT NOT NULL,
      last_seq BIGINT NOT NULL,
      message_ids TEXT NOT NULL,
      seqs TEXT NOT NULL,
      sizes TEXT NOT NULL,
      pending_count BIGINT NOT NULL CHECK (pending_count >= 0),
      pending_bytes BIGINT NOT NULL CHECK (pending_bytes >= 0)
    );
    CREATE INDEX envelope_batches_ids ON envelope_batches(recipient_row, first_id, last_id);
    CREATE INDEX envelope_batches_pending ON envelope_batches(recipient_row, first_seq, id) WHERE pending_count > 0;
    CREATE TABLE envelopes_done (
      batch_id BIGINT NOT NULL REFERENCES envelope_batches(id) ON DELETE CASCADE,
      message_id TEXT NOT NULL,
      done_at BIGINT NOT NULL,
      PRIMARY KEY (batch_id, message_id)
    );
    CREATE TABLE envelope_id_marks (
      recipient_row TEXT PRIMARY KEY,
      last_id TEXT COLLATE "C" NOT NULL
    );

    INSERT INTO envelope_batches (recipient_row, tenant_id, recipient_number, sender_row, sender_number,
        accepted_at, first_id, last_id, first_seq, last_seq, message_ids, seqs, sizes, pending_count, pending_bytes)
      SELECT recipient_row, tenant_id, recipient_number, sender_row, sender_number, accepted_at,
        message_id, message_id, stream_seq, stream_seq, message_id, stream_seq::text, size::text,
        CASE WHEN acked_at IS NULL THEN 1 ELSE 0 END, CASE WHEN acked_at IS NULL THEN size ELSE 0 END
      FROM envelopes ORDER BY envelopes.recipient_row, envelopes.stream_seq;
    INSERT INTO envelopes_done (batch_id, message_id, done_at)
      SELECT b.id, e.message_id, e.acked_at FROM envelopes e
      JOIN envelope_batches b ON b.recipient_row = e.recipient_row AND b.first_id = e.message_id
      WHERE e.acked_at IS NOT NULL AND e.stream_seq > 0;
    INSERT INTO envelope_id_marks (recipient_row, last_id)
      SELECT recipient_row, max(message_id COLLATE "C") FROM envelopes GROUP BY recipient_row;
    -- the totals, counted again from what was just copied
    DELETE FROM pending_totals;
    INSERT INTO pending_totals (recipient_row, pending_count, pending_bytes)
      SELECT recipient_row, sum(pending_count), sum(pending_bytes) FROM envelope_batches
      WHERE pending_count > 0 GROUP BY recipient_row;

    ALTER TABLE webhook_deliveries ADD COLUMN batch_id BIGINT, ADD COLUMN stream_seq BIGINT;
    UPDATE webhook_deliveries d SET batch_id = b.id, stream_seq = b.first_seq
      FROM envelope_batches b WHERE b.recipient_row = d.recipient_row AND b.first_id = d.message_id;
    DELETE FROM webhook_deliveries WHERE batch_id IS NULL;
    ALTER TABLE webhook_deliveries ALTER COLUMN batch_id SET NOT NULL, ALTER COLUMN stream_seq SET NOT NULL,
      ADD FOREIGN KEY (batch_id) REFERENCES envelope_batches(id) ON DELETE CASCADE;
    CREATE INDEX webhook_deliveries_batch ON webhook_deliveries(batch_id);
    -- CASCADE drops the deliveries' foreign key to it (not the deliveries)
    DROP TABLE envelopes CASCADE;
  `,
};
