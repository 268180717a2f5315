import type { Migration } from './types.js';

/**
 * SQLite: the pending index (envelopes) no longer checks its agent rows by foreign key, as
 * on PostgreSQL since migration 009, and for the same reason: agent rows are never deleted,
 * and a send records only rows for agents it has just read, so the checks could never
 * refuse anything. On SQLite they are two look-ups in the agents' key per recorded
 * envelope: a 100-row insert of the relay's shape cost a median of 2.6 and 3.1 µs per row
 * with them, 2.2 and 2.4 without (two runs of seven alternating rounds, 2026-11-24).
 *
 * SQLite cannot drop a constraint, so the table is rebuilt (its documented procedure: a new
 * table, the rows copied, the old one dropped, the new one renamed), with foreign key
 * enforcement off for the migration (`withoutForeignKeys`): otherwise dropping the old
 * table would delete every webhook delivery through their cascade. Webhook deliveries
 * still refer to their envelope, by table name, and the runner checks every foreign key
 * before it commits. Depends on 003 and 005.
 */
export const migration011: Migration = {
  version: 11,
  name: 'sqlite-envelope-agent-keys',
  withoutForeignKeys: true,
  up: `
    CREATE TABLE envelopes_rebuilt (
      recipient_row TEXT NOT NULL,
      message_id TEXT NOT NULL,
      tenant_id TEXT NOT NULL,
      recipient_number TEXT NOT NULL,
      sender_row TEXT NOT NULL,
      sender_number TEXT NOT NULL,
      stream_seq INTEGER NOT NULL,
      size INTEGER NOT NULL,
      accepted_at INTEGER NOT NULL,
      acked_at INTEGER,
      PRIMARY KEY (recipient_row, message_id)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO envelopes_rebuilt (recipient_row, message_id, tenant_id, recipient_number, sender_row,
        sender_number, stream_seq, size, accepted_at, acked_at)
      SELECT recipient_row, message_id, tenant_id, recipient_number, sender_row,
        sender_number, stream_seq, size, accepted_at, acked_at
      FROM envelopes;
    DROP TABLE envelopes;
    ALTER TABLE envelopes_rebuilt RENAME TO envelopes;
    CREATE INDEX envelopes_pending ON envelopes(recipient_row, stream_seq) WHERE acked_at IS NULL;
  `,
  postgres: '',
};
