/**
 * The ledger's stores on both databases: SQLite (the embedded default) and PostgreSQL
 * (a server started once for this file by the test harness, or the run's shared one). Each single-use thing is
 * raced: on PostgreSQL through two ledgers (two pools) on one database, as two relay
 * instances would; on SQLite (one relay's own file) through concurrent calls on one.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { newMessageId } from '@svc/shared';
import { tempDir } from '@svc/test-harness';
import { postgresUnavailable, type TestPostgres, testPostgres } from '@svc/test-harness/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerLocation } from '../src/ledger/database.js';
import { Ledger } from '../src/ledger/ledger.js';
import { MIGRATIONS } from '../src/ledger/migrations/index.js';
import { createStores } from '../src/ledger/stores.js';

const pgMissing = postgresUnavailable();
let server: TestPostgres | undefined;
beforeAll(async () => {
  if (!pgMissing) server = await testPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

type Kind = 'sqlite' | 'postgres';

async function freshLocation(kind: Kind): Promise<LedgerLocation> {
  if (kind === 'sqlite') return { sqlite: join(tempDir('svc-ledger-'), 'ledger.db') };
  if (!server) throw new Error('no PostgreSQL server');
  return { dsnFile: (await server.createDatabase()).dsnFile };
}

const NOW = 1_700_000_000_000;
const KEY = (c: string) => c.repeat(43);
let seq = 0;

async function addGrant(ledger: Ledger, agentId: string, id = `g${++seq}`): Promise<string> {
  await ledger.insertGrant({
    id,
    tenant_id: 't',
    agent_id: agentId,
    agent_number: agentId,
    capabilities: ['http-relay'],
    secret_hash: 'h',
    created_by: 'test',
    created_at: NOW,
    expires_at: NOW + 60_000,
  });
  return id;
}

const newAgent = (grantId: string, agentId: string, row = `row${++seq}`) => ({
  id: row,
  tenant_id: 't',
  agent_id: agentId,
  agent_number: agentId,
  capabilities: ['http-relay' as const],
  signing_public_key: KEY('S'),
  encryption_public_key: KEY('E'),
  display_name: null,
  description: null,
  discoverable: true,
  grant_id: grantId,
  created_at: NOW,
});

async function enroll(ledger: Ledger, agentId: string): Promise<string> {
  const agent = newAgent(await addGrant(ledger, agentId), agentId);
  const outcome = await ledger.enroll(
    agent,
    { hash: `key-${agent.id}`, created_at: NOW, expires_at: NOW + 1e9 },
    { created_at: new Date(NOW).toISOString(), signature: 'sig' },
    NOW,
  );
  expect(outcome).toBe('enrolled');
  return agent.id;
}

const envelope = (recipient: string, sender: string, messageId: string, seqNo = 1) => ({
  recipient_row: recipient,
  message_id: messageId,
  tenant_id: 't',
  recipient_number: 'r',
  sender_row: sender,
  sender_number: 's',
  stream_seq: seqNo,
  size: 10,
  accepted_at: NOW,
});

describe.each<Kind>(['sqlite', 'postgres'])('ledger on %s', (kind) => {
  const skip = kind === 'postgres' && pgMissing !== undefined;
  // two ledgers on one database: two relay instances
  let a: Ledger;
  let b: Ledger;

  describe.skipIf(skip)(skip ? `skipped: ${pgMissing}` : 'stores', () => {
    beforeAll(async () => {
      const location = await freshLocation(kind);
      if (kind === 'sqlite') {
        // SQLite is one relay's ledger: the "second instance" is concurrent requests on it
        a = await Ledger.open(location);
        b = a;
      } else {
        // both open (and migrate) at once, as two instances starting together
        [a, b] = await Promise.all([Ledger.open(location), Ledger.open(location)]);
      }
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
    });

    it('applies every migration once and records it in schema_migrations', async () => {
      const rows = await a.sql.all<{ version: number; name: string }>(
        'SELECT version, name FROM schema_migrations ORDER BY version',
      );
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    });

    it('single-use grant: of two instances redeeming it at once, exactly one enrolls', async () => {
      for (let i = 0; i < 10; i++) {
        const grant = await addGrant(a, `race${i}`);
        const outcomes = await Promise.all(
          [a, b].map((l) =>
            l.enroll(
              newAgent(grant, `race${i}`),
              { hash: `k${++seq}`, created_at: NOW, expires_at: NOW + 1e9 },
              { created_at: new Date(NOW).toISOString(), signature: 'sig' },
              NOW,
            ),
          ),
        );
        expect(outcomes.sort()).toEqual(['enrolled', 'grant_unavailable']);
      }
    });

    it('one agent id: two grants for it redeemed at once enroll it once, the other is name_taken', async () => {
      for (let i = 0; i < 5; i++) {
        const [g1, g2] = [await addGrant(a, `twin${i}`), await addGrant(a, `twin${i}`)];
        const outcomes = await Promise.all(
          [
            [a, g1],
            [b, g2],
          ].map(([l, g]) =>
            (l as Ledger).enroll(
              newAgent(g as string, `twin${i}`),
              { hash: `k${++seq}`, created_at: NOW, expires_at: NOW + 1e9 },
              { created_at: new Date(NOW).toISOString(), signature: 'sig' },
              NOW,
            ),
          ),
        );
        expect(outcomes.sort()).toEqual(['enrolled', 'name_taken']);
        // the refused grant is not spent
        const grants = [await a.getGrant(g1 as string), await a.getGrant(g2 as string)];
        expect(grants.filter((g) => g?.consumed_at === null)).toHaveLength(1);
      }
    });

    it('a challenge is spent once, whichever instance answers; spent rows go once expired', async () => {
      const row = await enroll(a, 'signer');
      for (let i = 0; i < 10; i++) {
        const id = `chl_${++seq}`;
        const got = await Promise.all([
          a.spendChallenge(id, row, NOW + 60_000, NOW),
          b.spendChallenge(id, row, NOW + 60_000, NOW),
        ]);
        expect(got.sort()).toEqual([false, true]);
      }
      const count = async () =>
        (await a.sql.get<{ n: number }>('SELECT count(*) AS n FROM challenges WHERE agent_row = ?', [row]))?.n;
      expect(Number(await count())).toBe(10);
      // the next spend after their expiry prunes them
      expect(await b.spendChallenge(`chl_${++seq}`, row, NOW + 120_000, NOW + 60_000)).toBe(true);
      expect(Number(await count())).toBe(1);
    });

    it('a message id is accepted once: the same sender at once records one row, another sender conflicts', async () => {
      const [r, s1, s2] = [await enroll(a, 'rcpt'), await enroll(a, 'snd1'), await enroll(a, 'snd2')];
      for (let i = 0; i < 10; i++) {
        // each publish has a stream sequence of its own: the retry's copy is another one
        const same = await Promise.all([
          createStores(a).messages.insertMany([envelope(r, s1, `same${i}`, 4 * i + 1)]),
          createStores(b).messages.insertMany([envelope(r, s1, `same${i}`, 4 * i + 2)]),
        ]);
        expect(same.map((o) => ('ignored' in o ? o.ignored.length : 'conflict')).sort()).toEqual([0, 1]);
        const other = await Promise.all([
          createStores(a).messages.insertMany([envelope(r, s1, `other${i}`, 4 * i + 3)]),
          createStores(b).messages.insertMany([envelope(r, s2, `other${i}`, 4 * i + 4)]),
        ]);
        expect(other.filter((o) => 'conflict' in o)).toEqual([{ conflict: `other${i}` }]);
      }
      const totals = await createStores(b).messages.pendingTotals(r);
      expect(totals).toEqual({ count: 20, bytes: 200 });
    });

    it('a batch with a retried envelope records the new ones and names the retry; one with another sender’s id records nothing', async () => {
      const [r, s1, s2] = [await enroll(a, 'mixr'), await enroll(a, 'mixs1'), await enroll(a, 'mixs2')];
      const ma = createStores(a).messages;
      expect(await ma.insertMany([envelope(r, s1, 'm1', 101)])).toEqual({ ignored: [] });
      // m1 again (its copy has another sequence), with two new ones around it
      const retry = await createStores(b).messages.insertMany([
        envelope(r, s1, 'm0', 102),
        envelope(r, s1, 'm1', 103),
        envelope(r, s1, 'm2', 104),
      ]);
      expect(retry).toEqual({ ignored: [{ ...envelope(r, s1, 'm1', 103), recorded_seq: 101 }] });
      expect((await ma.pending(r, 0, 10)).map((e) => [e.message_id, e.stream_seq])).toEqual([
        ['m1', 101],
        ['m0', 102],
        ['m2', 104],
      ]);
      // another sender's batch holding m2: refused whole, its new envelope not recorded either
      expect(await ma.insertMany([envelope(r, s2, 'm3', 105), envelope(r, s2, 'm2', 106)])).toEqual({
        conflict: 'm2',
      });
      expect(await ma.find(r, 'm3')).toBeUndefined();
      expect((await ma.find(r, 'm2'))?.sender_row).toBe(s1);
    });

    it('envelopes recorded in batches come back one by one in stream order, whatever batch holds them', async () => {
      const [r, s1, s2] = [await enroll(a, 'ordr'), await enroll(a, 'ords1'), await enroll(a, 'ords2')];
      const [ma, mb] = [createStores(a).messages, createStores(b).messages];
      // 40 requests of 5 whose publishes interleaved: request k's envelopes have sequences k, k + 40, k + 80, …
      const base = 10_000;
      for (let k = 0; k < 40; k++) {
        const batch = Array.from({ length: 5 }, (_, j) =>
          envelope(r, k % 2 ? s1 : s2, newMessageId(), base + k + 40 * j),
        );
        expect(await (k % 2 ? ma : mb).insertMany(batch)).toEqual({ ignored: [] });
      }
      const seqs = Array.from({ length: 200 }, (_, i) => base + i);
      expect((await mb.pending(r, 0, 500)).map((e) => e.stream_seq)).toEqual(seqs);
      // after cursors inside batches' ranges, a page at a time
      for (const after of [base + 3, base + 41, base + 150, base + 198, base + 199]) {
        expect((await ma.pending(r, after, 7)).map((e) => e.stream_seq)).toEqual(
          seqs.filter((x) => x > after).slice(0, 7),
        );
      }
      // acknowledged ones are left out, the rest keep their order
      const acked = [base, base + 40, base + 77];
      for (const x of acked) {
        const [row] = await ma.pending(r, x - 1, 1);
        expect(row?.stream_seq).toBe(x);
        expect(await ma.acknowledge(row as NonNullable<typeof row>, NOW)).toBe(true);
      }
      expect((await mb.pending(r, 0, 500)).map((e) => e.stream_seq)).toEqual(seqs.filter((x) => !acked.includes(x)));
      expect(await mb.pendingTotals(r)).toEqual({ count: 197, bytes: 1970 });
      // pending envelopes the stream no longer holds (below its first sequence) are marked done
      const change = await mb.expireBelow(r, base + 100, NOW);
      expect(change.get(r)).toEqual({ count: 97, bytes: 970 });
      expect((await ma.pending(r, 0, 500)).map((e) => e.stream_seq)).toEqual(seqs.filter((x) => x >= base + 100));
      expect(await ma.pendingTotals(r)).toEqual({ count: 100, bytes: 1000 });
    });

    it('finds a recorded id in whichever batch holds it: long ago, in the same millisecond, out of order, split', async () => {
      const [r, s1, s2] = [await enroll(a, 'findr'), await enroll(a, 'finds1'), await enroll(a, 'finds2')];
      const [ma, mb] = [createStores(a).messages, createStores(b).messages];
      // ids as a client that does not keep them in order makes them: random within their millisecond
      const jumbled = (ms: number) => {
        const id = newMessageId(ms);
        return `${id.slice(0, 15)}${randomBytes(2).toString('hex').slice(0, 3)}${id.slice(18)}`;
      };
      const t = Date.now();
      let n = 50_000;
      const send = (sender: string, ids: string[]) => ids.map((id) => envelope(r, sender, id, ++n));
      const old = Array.from({ length: 20 }, () => jumbled(t - 60_000));
      expect(await ma.insertMany(send(s1, old))).toEqual({ ignored: [] });
      for (let i = 0; i < 30; i++)
        expect(
          await mb.insertMany(
            send(
              s1,
              Array.from({ length: 10 }, () => jumbled(t)),
            ),
          ),
        ).toEqual({ ignored: [] });
      // the same millisecond again, with one of the old ids and two of a batch just recorded
      const recent = Array.from({ length: 10 }, () => jumbled(t));
      expect(await ma.insertMany(send(s1, recent))).toEqual({ ignored: [] });
      const retry = send(s1, [jumbled(t), old[7] as string, recent[3] as string, jumbled(t), recent[9] as string]);
      const outcome = await mb.insertMany(retry);
      expect('ignored' in outcome && outcome.ignored.map((x) => x.message_id).sort()).toEqual(
        [old[7], recent[3], recent[9]].sort(),
      );
      // another sender's request holding a recorded id records nothing
      expect(await ma.insertMany(send(s2, [jumbled(t + 1), old[0] as string]))).toEqual({ conflict: old[0] });
      // a request made over three seconds is recorded in several batches, each of whose ids is found
      const slow = [0, 900, 1800, 2700].map((dt) => jumbled(t + 10_000 + dt));
      expect(await mb.insertMany(send(s1, slow))).toEqual({ ignored: [] });
      for (const id of [...old, ...recent, ...slow]) expect((await ma.find(r, id))?.sender_row).toBe(s1);
      expect((await ma.existingSenders(r, [...slow, old[1] as string, jumbled(t)])).size).toBe(5);
      expect(await ma.pendingTotals(r)).toEqual({ count: 20 + 300 + 10 + 2 + 4, bytes: 3360 });
      // the same request from two instances at once is recorded once
      const twice = Array.from({ length: 50 }, () => newMessageId());
      const both = await Promise.all([ma.insertMany(send(s1, twice)), mb.insertMany(send(s1, twice))]);
      expect(both.map((o) => ('ignored' in o ? o.ignored.length : 'conflict')).sort()).toEqual([0, 50]);
      expect(await ma.pendingTotals(r)).toEqual({ count: 386, bytes: 3860 });
    });

    it('records every column as given, whether a batch’s rows share recipient and sender or each differs', async () => {
      const [r1, r2, s1, s2] = [
        await enroll(a, 'colr1'),
        await enroll(a, 'colr2'),
        await enroll(a, 'cols1'),
        await enroll(a, 'cols2'),
      ];
      const row = (recipient: string, sender: string, id: string, n: number, shared = {}) => ({
        ...envelope(recipient, sender, id, 900 + n),
        size: 10 * n,
        recipient_number: `num-${recipient}`,
        sender_number: `num-${sender}`,
        tenant_id: 't',
        ...shared,
      });
      const ma = createStores(a).messages;
      // one request's envelopes to one recipient (SQLite binds what they share once) …
      const one = [row(r1, s1, 'c1', 1), row(r1, s1, 'c2', 2), row(r1, s1, 'c3', 3)];
      // … and batches where each column in turn differs between rows
      const mixed = [
        [row(r1, s1, 'd1', 4), row(r2, s1, 'd2', 5)],
        [row(r1, s1, 'd3', 6), row(r1, s2, 'd4', 7)],
        [row(r1, s1, 'd5', 8), row(r1, s1, 'd6', 9, { accepted_at: NOW + 1 })],
        [row(r1, s1, 'd7', 10), row(r1, s1, 'd8', 11, { recipient_number: 'other' })],
        [row(r1, s1, 'd9', 12), row(r1, s1, 'd10', 13, { sender_number: 'other' })],
        [row(r1, s1, 'd11', 14), row(r1, s1, 'd12', 15, { tenant_id: 'other' })],
      ];
      let filler = 0;
      for (const batch of [one, ...mixed]) {
        expect(await ma.insertMany(batch)).toEqual({ ignored: [] });
        // again with fillers past one statement's 500 rows: the transaction's insert, in chunks
        const long = [
          ...batch.map((r) => ({ ...r, message_id: `${r.message_id}t`, stream_seq: r.stream_seq + 100 })),
          ...Array.from({ length: 500 }, () => row(r2, s2, `f${++filler}`, 1)),
        ];
        expect(await ma.insertMany(long)).toEqual({ ignored: [] });
        for (const r of [...batch, ...long.slice(0, batch.length), ...long.slice(-2)]) {
          expect(await ma.find(r.recipient_row, r.message_id)).toEqual({
            ...r,
            acked_at: null,
            batch_id: expect.any(Number),
          });
        }
      }
    });

    it('acknowledges once and keeps receipts in order', async () => {
      const [r, s] = [await enroll(a, 'ackr'), await enroll(a, 'acks')];
      const [ma, mb] = [createStores(a).messages, createStores(b).messages];
      await ma.insertMany([envelope(r, s, 'x1', 1), envelope(r, s, 'x2', 2)]);
      expect((await mb.pending(r, 0, 10)).map((e) => e.message_id)).toEqual(['x1', 'x2']);
      const row = (await ma.find(r, 'x1')) as NonNullable<Awaited<ReturnType<typeof ma.find>>>;
      expect((await Promise.all([ma.acknowledge(row, NOW), mb.acknowledge(row, NOW)])).sort()).toEqual([false, true]);
      expect(await mb.receipts(s, 0, 10)).toEqual([
        { id: expect.any(Number), message_id: 'x1', recipient_number: 'r', acked_at: NOW },
      ]);
      expect(await ma.existingSenders(r, ['x1', 'x2', 'nope'])).toEqual(
        new Map([
          ['x1', s],
          ['x2', s],
        ]),
      );
      expect(await ma.pendingTotals(r)).toEqual({ count: 1, bytes: 10 });
    });

    it('pending totals agree with the envelopes after sends, retries, refusals, webhooks, acks and a revocation', async () => {
      const [r1, r2, s1, s2] = [
        await enroll(a, 'totr1'),
        await enroll(a, 'totr2'),
        await enroll(a, 'tots1'),
        await enroll(a, 'tots2'),
      ];
      const [ma, mb] = [createStores(a).messages, createStores(b).messages];
      const sized = (rcpt: string, snd: string, id: string, size: number, webhook = false) => ({
        ...envelope(rcpt, snd, id, ++seq),
        size,
        webhook,
      });
      // every envelope the recipient's batches list, less those done, counted apart from the batches' pending counts
      const counted = async (row: string) => {
        const batches = await a.sql.all<{ id: number; message_ids: string; seqs: string; sizes: string }>(
          'SELECT id, message_ids, seqs, sizes FROM envelope_batches WHERE recipient_row = ?',
          [row],
        );
        const done = new Set(
          (
            await a.sql.all<{ batch_id: number; message_id: string }>(
              'SELECT x.batch_id, x.message_id FROM envelopes_done x JOIN envelope_batches b ON b.id = x.batch_id WHERE b.recipient_row = ?',
              [row],
            )
          ).map((x) => `${x.batch_id} ${x.message_id}`),
        );
        let count = 0;
        let bytes = 0;
        for (const b of batches) {
          const [ids, seqs, sizes] = [b.message_ids.split(','), b.seqs.split(','), b.sizes.split(',')];
          for (const [i, id] of ids.entries()) {
            if (Number(seqs[i]) === 0 || done.has(`${b.id} ${id}`)) continue;
            count++;
            bytes += Number(sizes[i]);
          }
        }
        return { count, bytes };
      };
      const agree = async (expected: Record<string, [number, number]>) => {
        for (const [row, [count, bytes]] of Object.entries(expected)) {
          expect(await counted(row)).toEqual({ count, bytes });
          expect(await ma.pendingTotals(row)).toEqual({ count, bytes });
          expect(await mb.pendingTotals(row)).toEqual({ count, bytes });
        }
      };
      // both instances at once, to both recipients in each batch, in either order
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (i % 2 ? ma : mb).insertMany(
            i % 2
              ? [sized(r1, s1, `t${i}`, i + 1), sized(r2, s1, `t${i}`, 100)]
              : [sized(r2, s1, `t${i}`, 100), sized(r1, s1, `t${i}`, i + 1)],
          ),
        ),
      );
      await agree({ [r1]: [8, 36], [r2]: [8, 800] });
      // a retry with new envelopes around it (one statement), then through a webhook (a transaction)
      await ma.insertMany([sized(r1, s1, 't0', 1), sized(r1, s1, 'u1', 1000)]);
      await mb.insertMany([sized(r1, s1, 'u1', 1000, true), sized(r1, s1, 'u2', 2000, true)]);
      await agree({ [r1]: [10, 3036], [r2]: [8, 800] });
      // another sender's id refuses the batch: nothing of it is counted
      expect(await ma.insertMany([sized(r2, s2, 'u3', 5), sized(r2, s2, 't1', 5)])).toEqual({ conflict: 't1' });
      expect(await mb.insertMany([sized(r2, s2, 'u3', 5, true), sized(r2, s2, 't1', 5, true)])).toEqual({
        conflict: 't1',
      });
      await agree({ [r1]: [10, 3036], [r2]: [8, 800] });
      // an envelope acknowledged on both instances at once leaves once
      const u2 = await ma.find(r1, 'u2');
      expect(u2).toBeDefined();
      if (u2) await Promise.all([ma.acknowledge(u2, NOW), mb.acknowledge(u2, NOW)]);
      const t3 = await ma.find(r1, 't3');
      if (t3) await mb.acknowledge(t3, NOW);
      await agree({ [r1]: [8, 1032], [r2]: [8, 800] });
      // a revoked incarnation's index is dropped, and its totals with it
      await mb.forgetRecipient(r2);
      await agree({ [r1]: [8, 1032], [r2]: [0, 0] });
      // (the webhook deliveries queued here would be due in the next test)
      await a.sql.run('DELETE FROM webhook_deliveries WHERE recipient_row = ?', [r1]);
    });

    it('a webhook delivery is leased by one instance at a time, and taken over when the lease ends', async () => {
      const [r, s] = [await enroll(a, 'hookr'), await enroll(a, 'hooks')];
      const [wa, wb] = [createStores(a), createStores(b)];
      await wa.messages.insertMany([{ ...envelope(r, s, 'h1'), webhook: true }]);
      const [due] = await wb.webhooks.due(NOW, 10);
      expect(due?.message_id).toBe('h1');
      const id = (due as { id: string }).id;
      const lease = NOW + 30_000;
      const claimed = await Promise.all([wa.webhooks.claim(id, NOW, lease), wb.webhooks.claim(id, NOW, lease)]);
      expect(claimed.sort()).toEqual([false, true]);
      // while leased, no instance sees it due
      expect(await wb.webhooks.due(lease - 1, 10)).toEqual([]);
      // the holder died: after the lease, another instance takes it over (and counts the attempt)
      const [again] = await wb.webhooks.due(lease, 10);
      expect(again?.id).toBe(id);
      expect(await wb.webhooks.claim(id, lease, lease + 30_000)).toBe(true);
      expect((await wa.webhooks.get(id))?.attempts).toBe(2);
      // the first holder comes back late: its outcome no longer applies
      await wa.webhooks.retryAt(id, lease + 5, lease + 1, 503, 'late', 1);
      await wa.webhooks.finish(id, 'gave_up', lease + 1, 503, 'late', 1);
      expect(await wa.webhooks.get(id)).toMatchObject({ state: 'pending', next_attempt_at: lease + 30_000 });
      await wb.webhooks.finish(id, 'delivered', lease + 1, 200, null, 2);
      expect((await wa.webhooks.get(id))?.state).toBe('delivered');
      expect(await wa.webhooks.due(lease + 1e9, 10)).toEqual([]);
    });

    it('a revocation by one instance is seen by the other at once; two at once revoke once', async () => {
      for (let i = 0; i < 10; i++) {
        const row = await enroll(a, `gone${i}`);
        expect((await b.activeAgent('t', `gone${i}`))?.id).toBe(row);
        const revoked = await Promise.all([a.revokeAgent('t', `gone${i}`, NOW), b.revokeAgent('t', `gone${i}`, NOW)]);
        expect(revoked.filter((x) => x !== undefined)).toHaveLength(1);
        expect(await b.activeAgent('t', `gone${i}`)).toBeUndefined();
        expect((await b.apiKey(`key-${row}`))?.revoked_at).toBe(NOW);
        expect((await b.pendingCleanups()).map((x) => x.id)).toContain(row);
      }
    });

    it('profiles, webhook secret lifecycle, and the secret forgotten on revocation', async () => {
      const row = await enroll(a, 'prof');
      const p = createStores(a).profiles;
      const secret = 'ab'.repeat(32);
      const first = await p.update(row, { endpoint_url: 'https://x.example/', display_name: 'P' }, NOW, () => secret);
      expect(first.newWebhookSecret).toBe(secret);
      expect(first.profile).toMatchObject({ endpoint_url: 'https://x.example/', webhook_secret_set: true });
      expect((await a.agentByRow(row))?.display_name).toBe('P');
      expect(await createStores(b).webhooks.target(row)).toEqual({
        endpoint_url: 'https://x.example/',
        webhook_secret: secret,
      });
      const beat = await createStores(b).profiles.recordHeartbeat(row, NOW + 5, { presence_status: 'busy' });
      expect(beat).toMatchObject({ last_seen_at: NOW + 5, presence_status: 'busy', webhook_secret_set: true });
      await a.revokeAgent('t', 'prof', NOW);
      expect(await p.get(row)).toMatchObject({ endpoint_url: null, webhook_secret_set: false });
    });

    it("a send's target: the active agent by number, whether it blocked the sender, whether it has a webhook", async () => {
      const row = await enroll(a, 'target');
      await enroll(a, 'sender');
      const s = createStores(a);
      const target = { id: row, agent_id: 'target', agent_number: 'target' };
      expect(await s.messages.sendTarget('t', 'target', 'sender')).toEqual({
        recipient: target,
        blocked: false,
        webhook: false,
      });
      await s.relations.add('block', 't', 'target', { agent_id: 'sender', agent_number: 'sender' }, NOW);
      // another agent's block of the sender, and the target's block of another, are not this one
      await s.relations.add('block', 't', 'sender', { agent_id: 'target', agent_number: 'target' }, NOW);
      await s.profiles.update(row, { endpoint_url: 'https://hooks.example/target' }, NOW, () => 'a'.repeat(64));
      expect(await s.messages.sendTarget('t', 'target', 'sender')).toEqual({
        recipient: target,
        blocked: true,
        webhook: true,
      });
      expect(await s.messages.sendTarget('t', 'target', 'someone-else')).toEqual({
        recipient: target,
        blocked: false,
        webhook: true,
      });
      await s.profiles.update(row, { endpoint_url: null }, NOW, () => 'unused');
      expect(await s.relations.remove('block', 't', 'target', 'sender')).toBe(true);
      expect(await createStores(b).messages.sendTarget('t', 'target', 'sender')).toEqual({
        recipient: target,
        blocked: false,
        webhook: false,
      });
      expect(await s.messages.sendTarget('t', 'nobody', 'sender')).toBeUndefined();
      expect(await s.messages.sendTarget('other-tenant', 'target', 'sender')).toBeUndefined();
      await a.sql.run('UPDATE agents SET revoked_at = ? WHERE id = ?', [NOW, row]);
      expect(await s.messages.sendTarget('t', 'target', 'sender')).toBeUndefined();
    });

    it('contacts, blocks and mutes, and reports', async () => {
      const [me] = [await enroll(a, 'me'), await enroll(a, 'you')];
      const s = createStores(a);
      const you = { agent_id: 'you', agent_number: 'you' };
      expect((await s.contacts.upsert('t', 'me', you, { alias: 'Y' }, NOW)).created).toBe(true);
      expect(await s.contacts.upsert('t', 'me', you, { notes: 'n' }, NOW + 1)).toMatchObject({
        created: false,
        contact: { alias: 'Y', notes: 'n', agent_number: 'you' },
      });
      expect(await s.contacts.remove('t', 'me', 'you')).toBe(true);
      expect(await s.contacts.remove('t', 'me', 'you')).toBe(false);
      expect(await s.relations.add('block', 't', 'me', you, NOW)).toBe(NOW);
      expect(await s.relations.add('block', 't', 'me', you, NOW + 9)).toBe(NOW);
      expect(await createStores(b).relations.has('block', 't', 'me', 'you')).toBe(true);
      expect(await s.relations.targetByRef('block', 't', 'me', 'you')).toBe('you');
      expect(await s.relations.remove('block', 't', 'me', 'you')).toBe(true);
      const target = (await a.activeAgent('t', 'you'))?.id as string;
      await s.reports.insert({
        id: 'rep1',
        tenant_id: 't',
        reporter_agent_id: 'me',
        reporter_row: me,
        target_agent_id: 'you',
        target_row: target,
        reason: 'a long enough reason',
        created_at: NOW,
      });
      expect((await s.reports.about('t', 'you')).map((r) => r.id)).toEqual(['rep1']);
    });

    it('key rotation: two instances appending the same next version at once, one wins', async () => {
      const next = (c: string) => ({
        signing_public_key: KEY(c),
        encryption_public_key: KEY('E'),
        created_at: new Date(NOW).toISOString(),
        signature: 's',
        previous_signature: null,
      });
      for (let i = 0; i < 10; i++) {
        const row = await enroll(a, `rot${i}`);
        const owner = await createStores(a).keys.activeByRef('t', `rot${i}`);
        expect(owner?.id).toBe(row);
        const outcomes = await Promise.all([
          createStores(a).keys.append(row, 1, next('X'), NOW),
          createStores(b).keys.append(row, 1, next('Y'), NOW),
        ]);
        expect(outcomes.sort()).toEqual(['appended', 'conflict']);
        expect(await createStores(b).keys.history(owner as NonNullable<typeof owner>)).toHaveLength(2);
      }
    });

    it('named sources: one active source per consumer name', async () => {
      const [agent, edge] = [await enroll(a, 'src'), await enroll(a, 'edge')];
      const src = (id: string) => ({
        id,
        tenant_id: 't',
        agent_row: agent,
        edge_row: edge,
        durable: 'd1',
        created_at: NOW,
      });
      const results = await Promise.allSettled([
        createStores(a).sources.insert(src('s1')),
        createStores(b).sources.insert(src('s2')),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      expect(await createStores(b).sources.countForTenant('t')).toBe(1);
      expect(await createStores(b).sources.countForEdge(edge)).toBe(1);
    });
  });

  describe.skipIf(skip)(skip ? `skipped: ${pgMissing}` : 'schema versions', () => {
    it('refuses a database newer than the code, with a clear error', async () => {
      const location = await freshLocation(kind);
      const l = await Ledger.open(location);
      await l.sql.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        999,
        'future',
        NOW,
      ]);
      await l.close();
      await expect(Ledger.open(location)).rejects.toThrow(/schema version 999, newer than this relay knows/);
    });
  });
});
