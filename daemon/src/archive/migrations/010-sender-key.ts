import type { Migration } from './types.js';

/**
 * `sender_key`: the sender's signing key (base64url) an inbound envelope verified under
 * when it was archived, so a reader can tell a message signed by the key pinned now from
 * one signed by a key since replaced. Messages archived before it have none (null).
 */
export const migration010: Migration = {
  version: 10,
  name: 'sender-key',
  up(db) {
    db.exec('ALTER TABLE messages ADD COLUMN sender_key TEXT;');
  },
};
