import type { Migration } from './types.js';

/**
 * The outbox and mutes. `send_state` of an outbound message: `queued` (sealed and kept
 * here while the relay cannot be reached; sent again, same envelope and message id, when
 * it answers), `sent` (the relay accepted it) or `failed` (the relay refused it for
 * good; `send_error` says why). Messages archived before this migration were sent.
 * `muted` marks an inbound message from a sender the agent muted: archived, never
 * announced.
 */
export const migration009: Migration = {
  version: 9,
  name: 'outbox',
  up(db) {
    db.exec(`
      ALTER TABLE messages ADD COLUMN send_state TEXT CHECK (send_state IN ('queued', 'sent', 'failed'));
      ALTER TABLE messages ADD COLUMN send_error TEXT;
      ALTER TABLE messages ADD COLUMN muted INTEGER NOT NULL DEFAULT 0;
      UPDATE messages SET send_state = 'sent' WHERE direction = 'outbound';
      CREATE INDEX messages_outbox ON messages (seq) WHERE send_state = 'queued';
    `);
  },
};
