/**
 * The pending quota of a recipient with two relay instances on one PostgreSQL ledger:
 * each instance sees the other's sends and acknowledgements (nothing cached per process),
 * while its own reservations not yet recorded still count.
 */
import { postgresUnavailable, type TestPostgres, testPostgres } from '@svc/test-harness/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../src/ledger/ledger.js';
import type { EnvelopeRow, MessageStore } from '../src/ledger/messages.js';
import { createStores } from '../src/ledger/stores.js';
import { PendingTotals } from '../src/messages/pending-totals.js';

const missing = postgresUnavailable();
const NOW = 1_700_000_000_000;
const envelope = (id: string, seq: number, recipient = 'r') => ({
  recipient_row: recipient,
  message_id: id,
  tenant_id: 't',
  recipient_number: recipient,
  sender_row: 's',
  sender_number: 's',
  stream_seq: seq,
  size: 10,
  accepted_at: NOW,
});

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
    for (const id of ['r', 'r2', 'r3', 's']) {
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

  /**
   * The real ledger's answers, each held back until the test lets it through: a read of
   * the totals that is in flight while another request records and lets go of its share.
   */
  function heldStore(store: MessageStore) {
    const waiting: Array<() => void> = [];
    const held = {
      pendingTotals: async (row: string) => {
        const totals = await store.pendingTotals(row);
        await new Promise<void>((resolve) => waiting.push(resolve));
        return totals;
      },
    } as unknown as MessageStore;
    const answered = async (n: number) => {
      while (waiting.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const release = () => {
      const next = waiting.shift();
      if (!next) throw new Error('no read of the totals is waiting');
      next();
    };
    return { held, answered, release };
  }

  it('a share recorded while another request reads the totals is never missed', async () => {
    const store = createStores(a).messages;
    const { held, answered, release } = heldStore(store);
    const totals = new PendingTotals(held, { maxCount: 1, maxBytes: 0 }, { shared: true });
    // A reserves the one place
    const a1 = totals.reserve('r2', 'r2', 1, 10);
    await answered(1);
    release();
    await a1;
    // B reads the totals before A's envelope is recorded…
    const b1 = totals.reserve('r2', 'r2', 1, 10);
    await answered(1);
    // …and A records it and lets go of its share before B's answer comes back
    await store.insertMany([envelope('a', 1, 'r2')]);
    totals.recorded('r2', 1, 10);
    release();
    await expect(b1).rejects.toMatchObject({ code: 'recipient_inbox_full' });
    expect(await store.pendingTotals('r2')).toEqual({ count: 1, bytes: 10 });
  });

  it('a request refused for the shares of requests still checking is tried again once they are decided', async () => {
    const { held, answered, release } = heldStore(createStores(a).messages);
    const totals = new PendingTotals(held, { maxCount: 2, maxBytes: 0 }, { shared: true });
    // a batch of 3 that cannot fit, and one envelope that can, checking at once
    const big = totals.reserve('r3', 'r3', 3, 30);
    const small = totals.reserve('r3', 'r3', 1, 10);
    await answered(2);
    release();
    release();
    await expect(big).rejects.toMatchObject({ code: 'recipient_inbox_full' });
    // the small one's second look, after the big one was refused (not a refusal for good)
    await Promise.race([answered(1), small.catch(() => undefined)]);
    release();
    await expect(small).resolves.toBeUndefined();
  });
});
