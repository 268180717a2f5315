import type { Migration } from './types.js';

/** FTS5 over message text (external content, kept in step by triggers) for `svc msg search`. */
export const migration006: Migration = {
  version: 6,
  name: 'search',
  up(db) {
    db.exec(`
      CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, sender, recipient, conversation_id,
        content='messages', content_rowid='seq', tokenize='unicode61 remove_diacritics 2'
      );
      INSERT INTO messages_fts (rowid, content, sender, recipient, conversation_id)
        SELECT seq, content, sender, recipient, conversation_id FROM messages;
      CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, content, sender, recipient, conversation_id)
        VALUES (NEW.seq, NEW.content, NEW.sender, NEW.recipient, NEW.conversation_id);
      END;
      CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, sender, recipient, conversation_id)
        VALUES ('delete', OLD.seq, OLD.content, OLD.sender, OLD.recipient, OLD.conversation_id);
      END;
    `);
  },
};
