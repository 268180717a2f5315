import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';
import { migration003 } from './003-messages.js';
import { migration005 } from './005-webhook-deliveries.js';
import { migration009 } from './009-envelope-agent-keys.js';

describe('migration 009-envelope-agent-keys', () => {
  eachLedger(({ kind, fresh }) => {
    let db: SqlDatabase;
    const envelope = (messageId: string, recipient: string, sender = 's') =>
      db.run(
        `INSERT INTO envelopes (recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at)
         VALUES (?, ?, 't', ?, ?, ?, 1, 10, 0)`,
        [recipient, messageId, recipient, sender, sender],
      );

    it('applies over recorded envelopes, keeps them, and records itself', async () => {
      db = await fresh();
      await migrate(db, [migration001, migration003, migration005]);
      await insertGrant(db);
      for (const id of ['r', 's']) await insertAgent(db, id, { agentId: id });
      await envelope('m1', 'r');
      expect(await migrate(db, [migration001, migration003, migration005, migration009])).toEqual([9]);
      expect(await db.all('SELECT message_id FROM envelopes')).toEqual([{ message_id: 'm1' }]);
    });

    it('checks agent rows by foreign key on SQLite only; the idempotency key holds on both', async () => {
      if (kind === 'sqlite') await expect(envelope('m2', 'nobody')).rejects.toThrow(REFUSED.foreignKey);
      else await envelope('m2', 'nobody', 'nobody either');
      await expect(envelope('m1', 'r')).rejects.toThrow(REFUSED.unique);
    });

    it('still ties a webhook delivery to its envelope', async () => {
      await expect(
        db.run(
          `INSERT INTO webhook_deliveries (id, recipient_row, message_id, next_attempt_at, created_at, updated_at)
           VALUES ('evt_1', 'r', 'no such message', 0, 0, 0)`,
        ),
      ).rejects.toThrow(REFUSED.foreignKey);
    });
  });
});
