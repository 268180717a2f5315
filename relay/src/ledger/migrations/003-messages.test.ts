import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED, usesIndex } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';
import { migration003 } from './003-messages.js';

describe('migration 003-messages', () => {
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    const envelope = (messageId: string, seq: number, recipient = 'r') =>
      db.run(
        `INSERT INTO envelopes (recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at)
         VALUES (?, ?, 't', ?, 's', 's', ?, 10, 0)`,
        [recipient, messageId, recipient, seq],
      );

    it('applies after 001 and records itself', async () => {
      db = await fresh();
      await migrate(db, [migration001, migration003]);
      await insertGrant(db);
      for (const id of ['r', 's']) await insertAgent(db, id, { agentId: id });
      expect(await db.all('SELECT version FROM schema_migrations ORDER BY version')).toEqual([
        { version: 1 },
        { version: 3 },
      ]);
    });

    it('keeps one row per recipient and message id (the idempotency key)', async () => {
      await envelope('m1', 1);
      await expect(envelope('m1', 2)).rejects.toThrow(REFUSED.unique);
      await envelope('m1', 3, 's'); // the same id to another recipient is another envelope
    });

    it('serves the pending index in stream order and leaves acknowledged rows out', async () => {
      await envelope('m2', 5);
      await envelope('m3', 4);
      await db.run("UPDATE envelopes SET acked_at = 1 WHERE message_id = 'm3'");
      expect(
        await usesIndex(
          db,
          "SELECT * FROM envelopes WHERE recipient_row = 'r' AND acked_at IS NULL AND stream_seq > 0 ORDER BY stream_seq",
          'envelopes_pending',
        ),
      ).toBe(true);
      const rows = await db.all(
        "SELECT message_id FROM envelopes WHERE recipient_row = 'r' AND acked_at IS NULL ORDER BY stream_seq",
      );
      expect(rows).toEqual([{ message_id: 'm1' }, { message_id: 'm2' }]);
    });

    it('refuses rows for unknown agents and wrong types', async () => {
      await expect(envelope('m9', 9, 'nobody')).rejects.toThrow(REFUSED.foreignKey);
      await expect(
        db.run(
          "INSERT INTO receipts (tenant_id, sender_row, message_id, recipient_number, acked_at) VALUES ('t', 's', 'm', 'r', 'now')",
        ),
      ).rejects.toThrow(REFUSED.type);
    });
  });
});
