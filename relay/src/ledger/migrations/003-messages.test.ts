import { describe, expect, it } from 'vitest';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate, openDatabase } from '../database.js';
import { SqliteDatabase } from '../sqlite.js';
import { migration001 } from './001-initial.js';
import { migration003 } from './003-messages.js';

describe('migration 003-messages', async () => {
  const db = openDatabase(':memory:');
  await migrate(new SqliteDatabase(db), [migration001, migration003]);
  insertGrant(db);
  for (const id of ['r', 's']) insertAgent(db, id, { agentId: id });
  const envelope = (messageId: string, seq: number, recipient = 'r') =>
    db
      .prepare(
        `INSERT INTO envelopes (recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at)
         VALUES (?, ?, 't', ?, 's', 's', ?, 10, 0)`,
      )
      .run(recipient, messageId, recipient, seq);

  it('applies after 001 and records itself', async () => {
    expect(db.prepare('SELECT version FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1 },
      { version: 3 },
    ]);
  });

  it('keeps one row per recipient and message id (the idempotency key)', async () => {
    envelope('m1', 1);
    expect(() => envelope('m1', 2)).toThrow(/UNIQUE|PRIMARY KEY/);
    envelope('m1', 3, 's'); // the same id to another recipient is another envelope
  });

  it('serves the pending index in stream order and leaves acknowledged rows out', async () => {
    envelope('m2', 5);
    envelope('m3', 4);
    db.prepare("UPDATE envelopes SET acked_at = 1 WHERE message_id = 'm3'").run();
    const plan = db
      .prepare(
        "EXPLAIN QUERY PLAN SELECT * FROM envelopes WHERE recipient_row = 'r' AND acked_at IS NULL AND stream_seq > 0 ORDER BY stream_seq",
      )
      .all() as Array<{ detail: string }>;
    expect(plan.map((p) => p.detail).join(' ')).toContain('envelopes_pending');
    const rows = db
      .prepare("SELECT message_id FROM envelopes WHERE recipient_row = 'r' AND acked_at IS NULL ORDER BY stream_seq")
      .all();
    expect(rows).toEqual([{ message_id: 'm1' }, { message_id: 'm2' }]);
  });

  it('refuses rows for unknown agents and wrong types', async () => {
    expect(() => envelope('m9', 9, 'nobody')).toThrow(/FOREIGN KEY/);
    expect(() =>
      db
        .prepare(
          "INSERT INTO receipts (tenant_id, sender_row, message_id, recipient_number, acked_at) VALUES ('t', 's', 'm', 'r', 'now')",
        )
        .run(),
    ).toThrow(/cannot store TEXT value in INTEGER column/);
  });
});
