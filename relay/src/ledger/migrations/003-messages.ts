import type { Migration } from './types.js';

/**
 * The pending index: one row per accepted envelope (per recipient incarnation), pointing
 * at its JetStream sequence in the tenant's SVC_MSGS stream; and delivery receipts.
 */
export const migration003: Migration = {
  version: 3,
  name: 'messages',
  up: `
    CREATE TABLE envelopes (
      recipient_row TEXT NOT NULL REFERENCES agents(id),
      message_id TEXT NOT NULL,
      tenant_id TEXT NOT NULL,
      recipient_number TEXT NOT NULL,
      sender_row TEXT NOT NULL REFERENCES agents(id),
      sender_number TEXT NOT NULL,
      stream_seq INTEGER NOT NULL,
      size INTEGER NOT NULL,
      accepted_at INTEGER NOT NULL,
      acked_at INTEGER,
      PRIMARY KEY (recipient_row, message_id)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX envelopes_pending ON envelopes(recipient_row, stream_seq) WHERE acked_at IS NULL;

    CREATE TABLE receipts (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      tenant_id TEXT NOT NULL,
      sender_row TEXT NOT NULL REFERENCES agents(id),
      message_id TEXT NOT NULL,
      recipient_number TEXT NOT NULL,
      acked_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX receipts_sender ON receipts(sender_row, id);
  `,
  // PostgreSQL: BIGINT for millisecond times and sizes, no STRICT; the same constraints.
  postgres: `
    CREATE TABLE envelopes (
      recipient_row TEXT NOT NULL REFERENCES agents(id),
      message_id TEXT NOT NULL,
      tenant_id TEXT NOT NULL,
      recipient_number TEXT NOT NULL,
      sender_row TEXT NOT NULL REFERENCES agents(id),
      sender_number TEXT NOT NULL,
      stream_seq BIGINT NOT NULL,
      size BIGINT NOT NULL,
      accepted_at BIGINT NOT NULL,
      acked_at BIGINT,
      PRIMARY KEY (recipient_row, message_id)
    );
    CREATE INDEX envelopes_pending ON envelopes(recipient_row, stream_seq) WHERE acked_at IS NULL;

    CREATE TABLE receipts (
      id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      sender_row TEXT NOT NULL REFERENCES agents(id),
      message_id TEXT NOT NULL,
      recipient_number TEXT NOT NULL,
      acked_at BIGINT NOT NULL
    );
    CREATE INDEX receipts_sender ON receipts(sender_row, id);
  `,
};
