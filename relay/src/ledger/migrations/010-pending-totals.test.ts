import { describe, expect, it } from 'vitest';
import { eachLedger } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { MIGRATIONS } from './index.js';

const before = MIGRATIONS.filter((m) => m.version < 10);
const upTo10 = MIGRATIONS.filter((m) => m.version <= 10);

describe('migration 010-pending-totals', () => {
  eachLedger(({ kind, fresh }) => {
    let db: SqlDatabase;
    const envelope = (messageId: string, recipient: string, size: number, ackedAt: number | null = null) =>
      db.run(
        `INSERT INTO envelopes (recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at, acked_at)
         VALUES (?, ?, 't', ?, 's', 's', 1, ?, 0, ?)`,
        [recipient, messageId, recipient, size, ackedAt],
      );

    it('applies over recorded envelopes, keeps them, and records itself', async () => {
      db = await fresh();
      await migrate(db, before);
      await insertGrant(db);
      for (const id of ['r1', 'r2', 'r3', 's']) await insertAgent(db, id, { agentId: id });
      await envelope('m1', 'r1', 10);
      await envelope('m2', 'r1', 20);
      await envelope('m3', 'r1', 40, 5);
      await envelope('m4', 'r2', 7);
      await envelope('m5', 'r3', 9, 5);
      expect(await migrate(db, upTo10)).toEqual([10]);
      expect(await db.get('SELECT count(*) AS n FROM envelopes')).toEqual({ n: 5 });
    });

    it('PostgreSQL: seeds each recipient’s totals from its unacknowledged envelopes; SQLite has no such table', async () => {
      if (kind === 'sqlite') {
        await expect(db.all('SELECT * FROM pending_totals')).rejects.toThrow(/no such table/);
        return;
      }
      expect(
        await db.all('SELECT recipient_row, pending_count, pending_bytes FROM pending_totals ORDER BY recipient_row'),
      ).toEqual([
        { recipient_row: 'r1', pending_count: 2, pending_bytes: 30 },
        { recipient_row: 'r2', pending_count: 1, pending_bytes: 7 },
      ]);
      await expect(db.run("INSERT INTO pending_totals VALUES ('r1', 1, 1)")).rejects.toThrow(/unique|duplicate key/);
    });
  });
});
