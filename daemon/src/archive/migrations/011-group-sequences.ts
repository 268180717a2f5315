import type { Migration } from './types.js';

/**
 * Groups and broadcasts. `conv_seq` is the sender's number for a group message (signed,
 * inside the ciphertext); `seq_note` records what the receiver saw on its arrival (a gap
 * before it, a late arrival, duplicates) as JSON, so `svc read` can show it.
 * `conversation_counters` is this agent's next number per conversation it posts in.
 * `group_state` says whether the agent is in a conversation it knows (left: nothing more
 * is sent there, and nothing new is taken).
 */
export const migration011: Migration = {
  version: 11,
  name: 'group-sequences',
  up(db) {
    db.exec(`
      ALTER TABLE messages ADD COLUMN conv_seq INTEGER;
      ALTER TABLE messages ADD COLUMN seq_note TEXT;
      CREATE INDEX messages_conv_seq ON messages (conversation_id, sender, conv_seq) WHERE conv_seq IS NOT NULL;
      CREATE TABLE conversation_counters (
        conversation_id TEXT PRIMARY KEY,
        next_seq INTEGER NOT NULL
      );
    `);
  },
};
