import type { Migration } from './types.js';

/** Delivery receipts of messages this agent sent, and envelopes refused on receipt (audit). */
export const migration004: Migration = {
  version: 4,
  name: 'receipts',
  up(db) {
    db.exec(`
      CREATE TABLE receipts (
        message_id TEXT PRIMARY KEY,
        recipient TEXT NOT NULL,
        status TEXT NOT NULL,
        at TEXT NOT NULL
      );
      CREATE TABLE rejected_envelopes (
        message_id TEXT NOT NULL,
        sender TEXT NOT NULL,
        reason TEXT NOT NULL,
        rejected_at TEXT NOT NULL
      );
    `);
  },
};
