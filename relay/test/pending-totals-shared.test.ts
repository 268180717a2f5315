/**
 * The pending quota of a recipient with two relay instances on one PostgreSQL ledger:
 * each instance sees the other's sends and acknowledgements (nothing cached per process),
 * while its own reservations not yet recorded still count.
 */
import { postgresUnavailable, type TestPostgres, testPostgres } from '@svc/test-harness/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../src/ledger/ledger.js';
import type { EnvelopeRow } from '../src/ledger/messages.js';
import { createStores } from '../src/ledger/stores.js';
import { PendingTotals } from '../src/messages/pending-totals.js';

const missing = postgresUnavailable();
const NOW = 1_700_000_000_000;

describe.skipIf(missing !== undefined)(missing ? `skipped: ${missing}` : 'pending quota on a shared ledger', () => {
  let server: TestPostgres;
  let a: Ledger;
  let b: Ledger;

  beforeAll(async () => {
    server = await testPostgres();
    const { dsnFile } = await server.createDatabase();
    [a, b] = await Promise.all([Ledger.open({ dsnFile }), Ledger.open({ dsnFile })]);
    await a.sql.run(
      `INSERT INTO grants (id, tenant_id, agent_id, agent_number, capabilities, secret_hash, created_by, created_at, expires_at)
       VALUES ('g', 't', 'r', 'r', '[]', 'h', 'x', 0, 1)`,
    );
    for (const id of ['r', 's']) {
      await a.sql.run(
        `INSERT INTO agents (id, tenant_id, agent_id, agent_number, capabilities, signing_public_key, encryption_public_key, grant_id, created_at)
         VALUES (?, 't', ?, ?, '[]', 's', 'e', 'g', 0)`,
        [id, id, id],
      );
    }
  }, 60_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await server?.stop();
  });

  it('an instance sees the sends and acknowledgements of the other at once', async () => {
    const [sa, sb] = [createStores(a).messages, createStores(b).messages];
    const quota = { maxCount: 2, maxBytes: 0 };
    const [ta, tb] = [new PendingTotals(sa, quota, { shared: true }), new PendingTotals(sb, quota, { shared: true })];
    const envelope = (id: string, seq: number) => ({
      recipient_row: 'r',
      message_id: id,
      tenant_id: 't',
      recipient_number: 'r',
      sender_row: 's',
      sender_number: 's',
      stream_seq: seq,
      size: 10,
      accepted_at: NOW,
    });
    // instance A records two envelopes for r
    await ta.reserve('r', 'r', 2, 20);
    await sa.insertMany([envelope('m1', 1), envelope('m2', 2)]);
    ta.recorded('r', 2, 20);
    // instance B sees them: r is full
    await expect(tb.reserve('r', 'r', 1, 10)).rejects.toMatchObject({ code: 'recipient_inbox_full' });
    // r acknowledges one through B: A has room again
    await sb.acknowledge((await sb.find('r', 'm1')) as EnvelopeRow, NOW);
    tb.acknowledged('r', 1, 10);
    await ta.reserve('r', 'r', 1, 10);
    // A's reservation, not yet recorded, counts on A
    await expect(ta.reserve('r', 'r', 1, 10)).rejects.toMatchObject({ code: 'recipient_inbox_full' });
    ta.unreserve('r', 1, 10);
    await ta.reserve('r', 'r', 1, 10);
  });
});
