import type { Migration } from './types.js';

/**
 * PostgreSQL: the pending index (envelopes) no longer checks its agent rows by foreign key.
 * PostgreSQL checks a foreign key with a trigger per inserted row, and on the send path those
 * two checks cost about half of the server's work for each envelope recorded (an insert of
 * 100 rows: 23–32 µs of backend CPU per row with them, 9–18 without). Agent rows are never
 * deleted, and a send records only rows for agents it has just read, so the checks could
 * never refuse anything. SQLite checks a foreign key by a look-up in the same statement,
 * which cost nothing measurable; its table keeps them (changing them there means rebuilding
 * the table). Webhook deliveries still refer to their envelope. Depends on 003.
 */
export const migration009: Migration = {
  version: 9,
  name: 'envelope-agent-keys',
  up: '',
  postgres: `
    ALTER TABLE envelopes DROP CONSTRAINT envelopes_recipient_row_fkey;
    ALTER TABLE envelopes DROP CONSTRAINT envelopes_sender_row_fkey;
  `,
};
