import type { Migration } from './types.js';

/**
 * Key record version 1 may carry the enrolling identity's own signature. Since this
 * version the enrollment request signs version 1 (created_at = the proof's issued_at) and
 * the relay writes it down at enrollment, signature included, so a peer can check it
 * against the signing key it pinned. Incarnations enrolled before keep an unsigned
 * version 1 (derived from the agents row or written by their first rotation).
 * SQLite cannot relax a CHECK in place: the table is rebuilt with its rows and trigger.
 * Depends only on 001 and 004.
 */
export const migration007: Migration = {
  version: 7,
  name: 'signed-enrollment-record',
  up: `
    CREATE TABLE agent_key_records_007 (
      agent_row TEXT NOT NULL REFERENCES agents(id),
      version INTEGER NOT NULL CHECK (version >= 1),
      signing_public_key TEXT NOT NULL CHECK (length(signing_public_key) = 43),
      encryption_public_key TEXT NOT NULL CHECK (length(encryption_public_key) = 43),
      -- RFC 3339, exactly as signed
      created_at TEXT NOT NULL,
      signature TEXT,
      previous_signature TEXT,
      -- relay clock, ms
      recorded_at INTEGER NOT NULL,
      PRIMARY KEY (agent_row, version),
      CHECK (
        (version = 1 AND previous_signature IS NULL)
        OR (version > 1 AND signature IS NOT NULL)
      )
    ) STRICT;
    INSERT INTO agent_key_records_007 SELECT agent_row, version, signing_public_key, encryption_public_key,
      created_at, signature, previous_signature, recorded_at FROM agent_key_records;
    DROP TABLE agent_key_records;
    ALTER TABLE agent_key_records_007 RENAME TO agent_key_records;

    CREATE TRIGGER agent_key_records_append_only
    BEFORE UPDATE ON agent_key_records
    BEGIN
      SELECT RAISE(ABORT, 'key records are append-only');
    END;
  `,
  // PostgreSQL: BIGINT for millisecond times and sizes, no STRICT; the same constraints.
  postgres: `
    ALTER TABLE agent_key_records DROP CONSTRAINT agent_key_records_signed;
    ALTER TABLE agent_key_records ADD CONSTRAINT agent_key_records_signed CHECK (
      (version = 1 AND previous_signature IS NULL)
      OR (version > 1 AND signature IS NOT NULL)
    );
  `,
};
