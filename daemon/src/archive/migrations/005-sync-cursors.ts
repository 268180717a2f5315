import type { Migration } from './types.js';

/** Named cursors: the relay stream position (Last-Event-ID), the last `check`, receipts. */
export const migration005: Migration = {
  version: 5,
  name: 'sync-cursors',
  up(db) {
    db.exec(`
      CREATE TABLE sync_cursors (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL,
        updated_at TEXT NOT NULL
      );
    `);
  },
};
