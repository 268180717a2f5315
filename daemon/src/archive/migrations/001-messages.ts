import type { Migration } from './types.js';

/**
 * Verified and decrypted messages, both directions. `seq` orders arrival locally (the
 * `check` cursor); the message id is the primary key so an insert is idempotent and a
 * redelivered envelope never duplicates.
 */
export const migration001: Migration = {
  version: 1,
  name: 'messages',
  up(db) {
    db.exec(`
      CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        message_id TEXT NOT NULL UNIQUE,
        conversation_id TEXT NOT NULL,
        conversation_type TEXT NOT NULL,
        direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
        sender TEXT NOT NULL,
        recipient TEXT NOT NULL,
        content_type TEXT NOT NULL,
        content TEXT NOT NULL,
        sent_at TEXT NOT NULL,
        received_at TEXT,
        acked_at TEXT,
        envelope TEXT
      );
      CREATE INDEX messages_conversation ON messages (conversation_id, sent_at);
      CREATE INDEX messages_unacked ON messages (direction, acked_at);
    `);
  },
};
