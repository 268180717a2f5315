import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED, usesIndex } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';
import { migration003 } from './003-messages.js';
import { migration005 } from './005-webhook-deliveries.js';

describe('migration 005-webhook-deliveries', () => {
  // 001 (agents) and 003 (envelopes) only: 005 must not depend on 002 or 004.
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    const envelope = (messageId: string) =>
      db.run(
        "INSERT INTO envelopes (recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at) VALUES ('row', ?, 't', 'a', 'row', 'a', 1, 10, 0)",
        [messageId],
      );
    const delivery = (r: {
      id: string;
      message_id: string;
      state?: string;
      next?: number | null;
      attempts?: number | string;
      recipient_row?: string;
    }) =>
      db.run(
        `INSERT INTO webhook_deliveries (id, recipient_row, message_id, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 0, 0)`,
        [
          r.id,
          r.recipient_row ?? 'row',
          r.message_id,
          r.state ?? 'pending',
          r.attempts ?? 0,
          r.next === undefined ? 0 : r.next,
        ],
      );

    it('records itself after 001 and 003 and is not applied twice', async () => {
      db = await fresh();
      await migrate(db, [migration001, migration003, migration005]);
      await insertGrant(db);
      await insertAgent(db, 'row');
      expect(await db.all('SELECT version, name FROM schema_migrations ORDER BY version')).toEqual([
        { version: 1, name: 'initial' },
        { version: 3, name: 'messages' },
        { version: 5, name: 'webhook-deliveries' },
      ]);
      expect(await migrate(db, [migration001, migration003, migration005])).toEqual([]);
    });

    it('queues at most one delivery per envelope, and only for an envelope that exists', async () => {
      await envelope('m1');
      await delivery({ id: 'evt_1', message_id: 'm1' });
      await expect(delivery({ id: 'evt_2', message_id: 'm1' })).rejects.toThrow(REFUSED.unique);
      await expect(delivery({ id: 'evt_1', message_id: 'm1' })).rejects.toThrow(REFUSED.unique);
      await expect(delivery({ id: 'evt_3', message_id: 'no-such-envelope' })).rejects.toThrow(REFUSED.foreignKey);
      await expect(delivery({ id: 'evt_4', message_id: 'm1', recipient_row: 'nobody' })).rejects.toThrow(
        REFUSED.foreignKey,
      );
    });

    it('checks the id form, the state, and that exactly pending rows have a next attempt time', async () => {
      await envelope('m2');
      await expect(delivery({ id: 'wh_1', message_id: 'm2' })).rejects.toThrow(REFUSED.check);
      await expect(delivery({ id: 'evt_5', message_id: 'm2', state: 'lost' })).rejects.toThrow(REFUSED.check);
      await expect(delivery({ id: 'evt_5', message_id: 'm2', next: null })).rejects.toThrow(REFUSED.check);
      await expect(delivery({ id: 'evt_5', message_id: 'm2', state: 'delivered', next: 5 })).rejects.toThrow(
        REFUSED.check,
      );
      await expect(delivery({ id: 'evt_5', message_id: 'm2', attempts: -1 })).rejects.toThrow(REFUSED.check);
      await expect(delivery({ id: 'evt_5', message_id: 'm2', attempts: 'one' })).rejects.toThrow(REFUSED.type);
      await delivery({ id: 'evt_5', message_id: 'm2', state: 'gave_up', next: null, attempts: 3 });
    });

    it('finds due rows through the partial index, and goes with its envelope', async () => {
      expect(
        await usesIndex(
          db,
          "SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= 10",
          'webhook_deliveries_due',
        ),
      ).toBe(true);
      await db.run("DELETE FROM envelopes WHERE recipient_row = 'row'");
      expect(await db.get('SELECT count(*) AS n FROM webhook_deliveries')).toEqual({ n: 0 });
    });
  });
});
