import type { Migration } from './types.js';

/** One row per conversation, kept current by a trigger on messages (list and lookup by peer). */
export const migration002: Migration = {
  version: 2,
  name: 'conversations',
  up(db) {
    db.exec(`
      CREATE TABLE conversations (
        conversation_id TEXT PRIMARY KEY,
        conversation_type TEXT NOT NULL,
        peer TEXT,
        last_message_at TEXT NOT NULL,
        message_count INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX conversations_peer ON conversations (peer);
      INSERT INTO conversations (conversation_id, conversation_type, peer, last_message_at, message_count)
        SELECT conversation_id, conversation_type,
               CASE WHEN direction = 'inbound' THEN sender ELSE recipient END,
               MAX(sent_at), COUNT(*)
        FROM messages GROUP BY conversation_id;
      CREATE TRIGGER messages_conversation_ai AFTER INSERT ON messages BEGIN
        INSERT INTO conversations (conversation_id, conversation_type, peer, last_message_at, message_count)
        VALUES (NEW.conversation_id, NEW.conversation_type,
                CASE WHEN NEW.direction = 'inbound' THEN NEW.sender ELSE NEW.recipient END, NEW.sent_at, 1)
        ON CONFLICT (conversation_id) DO UPDATE SET
          last_message_at = MAX(last_message_at, excluded.last_message_at),
          message_count = message_count + 1;
      END;
    `);
  },
};
