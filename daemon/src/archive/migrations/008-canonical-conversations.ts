import type { Migration } from './types.js';

/**
 * Conversation ids were taken from inbound envelopes as the sender chose them, so a sender
 * could file its message under someone else's conversation and become the peer that a
 * send by that id reached. Every archived message moves to the direct conversation of its
 * two parties (`dm:<a>:<b>`, sorted; only direct conversations exist), and the
 * conversations table and the search index are rebuilt from the messages.
 */
export const migration008: Migration = {
  version: 8,
  name: 'canonical-conversations',
  up(db) {
    db.exec(`
      UPDATE messages SET conversation_type = 'direct',
        conversation_id = 'dm:' || min(sender, recipient) || ':' || max(sender, recipient)
        WHERE conversation_type <> 'direct'
           OR conversation_id <> 'dm:' || min(sender, recipient) || ':' || max(sender, recipient);
      DELETE FROM conversations;
      INSERT INTO conversations (conversation_id, conversation_type, peer, last_message_at, message_count)
        SELECT conversation_id, conversation_type,
               CASE WHEN direction = 'inbound' THEN sender ELSE recipient END,
               MAX(sent_at), COUNT(*)
        FROM messages GROUP BY conversation_id;
      INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
    `);
  },
};
