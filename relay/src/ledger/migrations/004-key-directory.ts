import type { Migration } from './types.js';

/**
 * The key directory: every version of an agent incarnation's public keys.
 *
 * Keyed by incarnation (agents.id): an agent id revoked and enrolled again starts a new
 * history at version 1. Version 1 is the enrollment keys; it is written lazily, together
 * with version 2, by the first rotation (until then it is derived from the agents row),
 * and it carries no signatures — the enrollment proof vouched for it. Later versions carry
 * the self-signature and, when the signing key changed, the previous key's signature.
 * Records are append-only: an UPDATE is refused. Depends only on 001 (agents).
 */
export const migration004: Migration = {
  version: 4,
  name: 'key-directory',
  up: `
    CREATE TABLE agent_key_records (
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
        (version = 1 AND signature IS NULL AND previous_signature IS NULL)
        OR (version > 1 AND signature IS NOT NULL)
      )
    ) STRICT;

    CREATE TRIGGER agent_key_records_append_only
    BEFORE UPDATE ON agent_key_records
    BEGIN
      SELECT RAISE(ABORT, 'key records are append-only');
    END;
  `,
  // PostgreSQL: BIGINT for millisecond times and sizes, no STRICT; the same constraints.
  postgres: `
    CREATE TABLE agent_key_records (
      agent_row TEXT NOT NULL REFERENCES agents(id),
      version INTEGER NOT NULL CHECK (version >= 1),
      signing_public_key TEXT NOT NULL CHECK (length(signing_public_key) = 43),
      encryption_public_key TEXT NOT NULL CHECK (length(encryption_public_key) = 43),
      created_at TEXT NOT NULL,
      signature TEXT,
      previous_signature TEXT,
      recorded_at BIGINT NOT NULL,
      PRIMARY KEY (agent_row, version),
      CONSTRAINT agent_key_records_signed CHECK (
        (version = 1 AND signature IS NULL AND previous_signature IS NULL)
        OR (version > 1 AND signature IS NOT NULL)
      )
    );
    CREATE FUNCTION agent_key_records_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      RAISE EXCEPTION 'key records are append-only';
    END;
    $fn$;
    CREATE TRIGGER agent_key_records_append_only
    BEFORE UPDATE ON agent_key_records
    FOR EACH ROW EXECUTE FUNCTION agent_key_records_refuse_update();
  `,
};
