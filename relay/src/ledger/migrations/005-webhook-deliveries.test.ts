import { describe, expect, it } from 'vitest';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate, openDatabase } from '../database.js';
import { SqliteDatabase } from '../sqlite.js';
import { migration001 } from './001-initial.js';
import { migration003 } from './003-messages.js';
import { migration005 } from './005-webhook-deliveries.js';

describe('migration 005-webhook-deliveries', async () => {
  // 001 (agents) and 003 (envelopes) only: 005 must not depend on 002 or 004.
  const db = openDatabase(':memory:');
  await migrate(new SqliteDatabase(db), [migration001, migration003, migration005]);
  insertGrant(db);
  insertAgent(db, 'row');
  const envelope = (messageId: string) =>
    db
      .prepare(
        "INSERT INTO envelopes (recipient_row, message_id, tenant_id, recipient_number, sender_row, sender_number, stream_seq, size, accepted_at) VALUES ('row', ?, 't', 'a', 'row', 'a', 1, 10, 0)",
      )
      .run(messageId);
  const delivery = (r: {
    id: string;
    message_id: string;
    state?: string;
    next?: number | null;
    attempts?: number | string;
    recipient_row?: string;
  }) =>
    db
      .prepare(
        `INSERT INTO webhook_deliveries (id, recipient_row, message_id, state, attempts, next_attempt_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, 0, 0)`,
      )
      .run(
        r.id,
        r.recipient_row ?? 'row',
        r.message_id,
        r.state ?? 'pending',
        r.attempts ?? 0,
        r.next === undefined ? 0 : r.next,
      );

  it('records itself after 001 and 003 and is not applied twice', async () => {
    expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1, name: 'initial' },
      { version: 3, name: 'messages' },
      { version: 5, name: 'webhook-deliveries' },
    ]);
    expect(await migrate(new SqliteDatabase(db), [migration001, migration003, migration005])).toEqual([]);
  });

  it('queues at most one delivery per envelope, and only for an envelope that exists', async () => {
    envelope('m1');
    delivery({ id: 'evt_1', message_id: 'm1' });
    expect(() => delivery({ id: 'evt_2', message_id: 'm1' })).toThrow(/UNIQUE/);
    expect(() => delivery({ id: 'evt_1', message_id: 'm1' })).toThrow(/UNIQUE|PRIMARY KEY/);
    expect(() => delivery({ id: 'evt_3', message_id: 'no-such-envelope' })).toThrow(/FOREIGN KEY/);
    expect(() => delivery({ id: 'evt_4', message_id: 'm1', recipient_row: 'nobody' })).toThrow(/FOREIGN KEY/);
  });

  it('checks the id form, the state, and that exactly pending rows have a next attempt time', async () => {
    envelope('m2');
    expect(() => delivery({ id: 'wh_1', message_id: 'm2' })).toThrow(/CHECK/);
    expect(() => delivery({ id: 'evt_5', message_id: 'm2', state: 'lost' })).toThrow(/CHECK/);
    expect(() => delivery({ id: 'evt_5', message_id: 'm2', next: null })).toThrow(/CHECK/);
    expect(() => delivery({ id: 'evt_5', message_id: 'm2', state: 'delivered', next: 5 })).toThrow(/CHECK/);
    expect(() => delivery({ id: 'evt_5', message_id: 'm2', attempts: -1 })).toThrow(/CHECK/);
    expect(() => delivery({ id: 'evt_5', message_id: 'm2', attempts: 'one' })).toThrow(
      /cannot store TEXT value in INTEGER column/,
    );
    delivery({ id: 'evt_5', message_id: 'm2', state: 'gave_up', next: null, attempts: 3 });
  });

  it('finds due rows through the partial index, and goes with its envelope', async () => {
    const plan = db
      .prepare("EXPLAIN QUERY PLAN SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?")
      .all(10) as Array<{ detail: string }>;
    expect(plan.map((p) => p.detail).join(' ')).toMatch(/webhook_deliveries_due/);
    db.prepare("DELETE FROM envelopes WHERE recipient_row = 'row'").run();
    expect(db.prepare('SELECT count(*) AS n FROM webhook_deliveries').get()).toEqual({ n: 0 });
  });
});
