import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED, usesIndex } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import { Ledger } from '../ledger.js';
import type { SqlDatabase } from '../sql.js';
import { createStores } from '../stores.js';
import { MIGRATIONS } from './index.js';

const before = MIGRATIONS.filter((m) => m.version < 13);
const upTo13 = MIGRATIONS.filter((m) => m.version <= 13);

const COLUMNS =
  'recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at, acked_at';

// ids as the relay records them (UUIDv7), and one of another shape as early ledgers may hold
const ID = {
  a: '019ac000-0000-7000-8000-000000000001',
  b: '019ac000-0000-7000-8000-000000000002',
  c: '019ac000-0001-7000-8000-000000000003',
  d: '019ac000-0002-7000-8000-000000000004',
  legacy: 'legacy-1',
};

describe('migration 013-envelope-batches', () => {
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    const envelope = (messageId: string, recipient: string, seq: number, ackedAt: number | null = null, sender = 's') =>
      db.run(`INSERT INTO envelopes (${COLUMNS}) VALUES (?, ?, 't', ?, ?, 'sender-number', ?, ?, ?, ?)`, [
        recipient,
        messageId,
        `${recipient}-number`,
        sender,
        seq,
        100 + seq,
        1_000 + seq,
        ackedAt,
      ]);

    it('turns each recorded envelope into a batch of its own, done where it was acknowledged or dropped', async () => {
      db = await fresh();
      await migrate(db, before);
      await insertGrant(db);
      for (const id of ['r1', 'r2', 's', 's2']) await insertAgent(db, id, { agentId: id });
      await envelope(ID.a, 'r1', 1);
      await envelope(ID.b, 'r1', 3, 77);
      await envelope(ID.c, 'r1', 2);
      // dropped for a block: sequence 0, done when accepted
      await envelope(ID.d, 'r1', 0, 1_000);
      await envelope(ID.legacy, 'r2', 4);
      await db.run(
        `INSERT INTO webhook_deliveries (id, recipient_row, message_id, next_attempt_at, created_at, updated_at)
         VALUES ('evt_1', 'r1', ?, 0, 0, 0)`,
        [ID.c],
      );
      expect(await migrate(db, upTo13)).toEqual([13]);
      expect(await db.get('SELECT name FROM schema_migrations WHERE version = 13')).toEqual({
        name: 'envelope-batches',
      });
      await expect(db.get('SELECT 1 FROM envelopes')).rejects.toThrow(/no such table|does not exist/);

      const { messages, webhooks } = createStores(Ledger.over(db));
      const row = (id: string, recipient: string, seq: number, ackedAt: number | null) => ({
        recipient_row: recipient,
        message_id: id,
        tenant_id: 't',
        recipient_number: `${recipient}-number`,
        sender_row: 's',
        sender_number: 'sender-number',
        stream_seq: seq,
        size: 100 + seq,
        accepted_at: 1_000 + seq,
        acked_at: ackedAt,
        batch_id: expect.any(Number),
      });
      expect(await messages.find('r1', ID.a)).toEqual(row(ID.a, 'r1', 1, null));
      expect(await messages.find('r1', ID.b)).toEqual(row(ID.b, 'r1', 3, 77));
      expect(await messages.find('r1', ID.d)).toEqual(row(ID.d, 'r1', 0, 1_000));
      expect(await messages.find('r2', ID.legacy)).toEqual(row(ID.legacy, 'r2', 4, null));
      expect((await messages.pending('r1', 0, 10)).map((e) => e.message_id)).toEqual([ID.a, ID.c]);
      expect(await messages.pendingTotals('r1')).toEqual({ count: 2, bytes: 203 });
      expect(await messages.pendingTotals('r2')).toEqual({ count: 1, bytes: 104 });
      const [due] = await webhooks.due(1, 10);
      expect(due).toMatchObject({ id: 'evt_1', message_id: ID.c, stream_seq: 2, accepted_at: 1_002, acked_at: null });

      // what was recorded stays taken: a retry is a duplicate, another sender's id refused
      const again = { ...row(ID.a, 'r1', 9, null), acked_at: undefined, batch_id: undefined };
      expect(await messages.insertMany([{ ...again, stream_seq: 9 }])).toEqual({
        ignored: [expect.objectContaining({ message_id: ID.a, recorded_seq: 1 })],
      });
      expect(
        await messages.insertMany([{ ...again, message_id: ID.legacy, recipient_row: 'r2', sender_row: 's2' }]),
      ).toEqual({ conflict: ID.legacy });
      expect(await messages.insertMany([{ ...again, message_id: ID.d, sender_row: 's2' }])).toEqual({ conflict: ID.d });
    });

    it('finds ids by the batches’ id index, and pending envelopes by the pending one', async () => {
      expect(
        await usesIndex(
          db,
          `SELECT id FROM envelope_batches WHERE recipient_row = 'r1' AND first_id >= '0' AND first_id <= '1' AND last_id >= '0'`,
          'envelope_batches_ids',
        ),
      ).toBe(true);
      expect(
        await usesIndex(
          db,
          "SELECT id FROM envelope_batches WHERE recipient_row = 'r1' AND pending_count > 0 AND first_seq >= 0 ORDER BY first_seq, id LIMIT 32",
          'envelope_batches_pending',
        ),
      ).toBe(true);
    });

    it('ties webhook deliveries and acknowledgements to their batch: they go with it', async () => {
      await expect(
        db.run(
          `INSERT INTO webhook_deliveries (id, recipient_row, message_id, batch_id, stream_seq, next_attempt_at, created_at, updated_at)
           VALUES ('evt_x', 'r1', 'x', 999999, 1, 0, 0, 0)`,
        ),
      ).rejects.toThrow(REFUSED.foreignKey);
      await createStores(Ledger.over(db)).messages.forgetRecipient('r1');
      expect(await db.all('SELECT id FROM webhook_deliveries')).toEqual([]);
      expect(await db.all("SELECT * FROM envelope_batches WHERE recipient_row = 'r1'")).toEqual([]);
      expect(await db.get('SELECT count(*) AS n FROM envelopes_done')).toEqual({ n: 0 });
    });
  });
});
