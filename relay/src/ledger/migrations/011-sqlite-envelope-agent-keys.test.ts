import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED, usesIndex } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { SqliteDatabase } from '../sqlite.js';
import { MIGRATIONS } from './index.js';

const before = MIGRATIONS.filter((m) => m.version < 11);
const upTo11 = MIGRATIONS.filter((m) => m.version <= 11);

const COLUMNS =
  'recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at, acked_at';

const envelope = (db: SqlDatabase, messageId: string, recipient: string, seq: number, ackedAt: number | null = null) =>
  db.run(`INSERT INTO envelopes (${COLUMNS}) VALUES (?, ?, 't', ?, 's', 'sender-number', ?, ?, ?, ?)`, [
    recipient,
    messageId,
    `${recipient}-number`,
    seq,
    100 + seq,
    1_000 + seq,
    ackedAt,
  ]);
const delivery = (db: SqlDatabase, id: string, recipient: string, messageId: string) =>
  db.run(
    `INSERT INTO webhook_deliveries (id, recipient_row, message_id, next_attempt_at, created_at, updated_at)
     VALUES (?, ?, ?, 0, 0, 0)`,
    [id, recipient, messageId],
  );
const all = (db: SqlDatabase) => db.all(`SELECT ${COLUMNS} FROM envelopes ORDER BY recipient_row, message_id`);

describe('migration 011-sqlite-envelope-agent-keys', () => {
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    let recorded: unknown[];

    it('applies over recorded envelopes and webhook deliveries, keeps every column of every row, and records itself', async () => {
      db = await fresh();
      await migrate(db, before);
      await insertGrant(db);
      for (const id of ['r1', 'r2', 's']) await insertAgent(db, id, { agentId: id });
      await envelope(db, 'm1', 'r1', 1);
      await envelope(db, 'm2', 'r1', 2, 77);
      await envelope(db, 'm3', 'r2', 3);
      await delivery(db, 'evt_1', 'r1', 'm1');
      await delivery(db, 'evt_3', 'r2', 'm3');
      recorded = await all(db);
      expect(recorded).toHaveLength(3);
      expect(await migrate(db, upTo11)).toEqual([11]);
      expect(await all(db)).toEqual(recorded);
      // dropping the old table with enforcement on would have cascaded to these
      expect(await db.all('SELECT id FROM webhook_deliveries ORDER BY id')).toEqual([{ id: 'evt_1' }, { id: 'evt_3' }]);
      expect(await db.get('SELECT name FROM schema_migrations WHERE version = 11')).toEqual({
        name: 'sqlite-envelope-agent-keys',
      });
    });

    it('no longer checks agent rows by foreign key (as on PostgreSQL); the idempotency key holds', async () => {
      await envelope(db, 'm4', 'nobody', 4);
      await expect(envelope(db, 'm1', 'r1', 5)).rejects.toThrow(REFUSED.unique);
    });

    it('turns enforcement back on: a webhook delivery is still tied to its envelope, and goes with it', async () => {
      await expect(delivery(db, 'evt_x', 'r1', 'no such message')).rejects.toThrow(REFUSED.foreignKey);
      await db.run("DELETE FROM envelopes WHERE recipient_row = 'r2'");
      expect(await db.all('SELECT id FROM webhook_deliveries')).toEqual([{ id: 'evt_1' }]);
    });

    it('keeps the pending index', async () => {
      expect(
        await usesIndex(
          db,
          "SELECT * FROM envelopes WHERE recipient_row = 'r1' AND acked_at IS NULL AND stream_seq > 0 ORDER BY stream_seq LIMIT 10",
          'envelopes_pending',
        ),
      ).toBe(true);
    });
  });

  it('SQLite: a row whose foreign key points at nothing fails the migration, which changes nothing', async () => {
    const db = SqliteDatabase.open(':memory:');
    try {
      await migrate(db, before);
      await insertGrant(db);
      for (const id of ['r1', 's']) await insertAgent(db, id, { agentId: id });
      await envelope(db, 'm1', 'r1', 1);
      // a delivery whose envelope is gone, as only a ledger edited by hand could hold
      await db.exec('PRAGMA foreign_keys = OFF');
      await delivery(db, 'evt_orphan', 'r1', 'gone');
      await db.exec('PRAGMA foreign_keys = ON');
      const rows = await all(db);
      await expect(migrate(db, upTo11)).rejects.toThrow(
        /ledger migration 11 \(sqlite-envelope-agent-keys\) left 1 row\(s\) whose foreign key points at nothing \(first: webhook_deliveries → envelopes\)/,
      );
      expect(await db.get('SELECT version FROM schema_migrations WHERE version = 11')).toBeUndefined();
      expect(await all(db)).toEqual(rows);
      // still the table from before: it checks agent rows, and enforcement is on again
      await expect(envelope(db, 'm2', 'nobody', 2)).rejects.toThrow(REFUSED.foreignKey);
    } finally {
      await db.close();
    }
  });
});
