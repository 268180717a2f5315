import type { Migration } from './types.js';

/**
 * When a message this agent sent was acknowledged by its recipient (the relay's receipt),
 * on the message itself so every view of the archive shows it; filled from receipts
 * already recorded.
 */
export const migration007: Migration = {
  version: 7,
  name: 'delivered',
  up(db) {
    db.exec(`
      ALTER TABLE messages ADD COLUMN delivered_at TEXT;
      UPDATE messages SET delivered_at = (SELECT at FROM receipts r WHERE r.message_id = messages.message_id)
        WHERE direction = 'outbound';
      CREATE INDEX messages_undelivered ON messages (sent_at) WHERE direction = 'outbound' AND delivered_at IS NULL;
    `);
  },
};
