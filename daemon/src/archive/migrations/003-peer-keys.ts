import type { Migration } from './types.js';

/**
 * Contacts and key pins (trust on first use). `changed_*` holds a key the relay now serves
 * that differs from the pin, until the owner accepts it. `held_envelopes` keeps envelopes
 * that verify only under such an unaccepted key: they are archived (as messages) once the
 * key is accepted, never before.
 */
export const migration003: Migration = {
  version: 3,
  name: 'peer-keys',
  up(db) {
    db.exec(`
      CREATE TABLE peer_keys (
        agent_number TEXT PRIMARY KEY,
        agent_id TEXT,
        signing_public_key TEXT NOT NULL,
        encryption_public_key TEXT NOT NULL,
        key_version INTEGER,
        pinned_at TEXT NOT NULL,
        changed_signing_public_key TEXT,
        changed_encryption_public_key TEXT,
        changed_seen_at TEXT,
        alias TEXT,
        notes TEXT
      );
      CREATE TABLE held_envelopes (
        message_id TEXT PRIMARY KEY,
        sender TEXT NOT NULL,
        envelope TEXT NOT NULL,
        held_at TEXT NOT NULL
      );
    `);
  },
};
