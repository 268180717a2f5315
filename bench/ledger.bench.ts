/**
 * bench:ledger — what recording accepted envelopes costs the relay's ledger, against the
 * least that any durable "this message id was accepted once" record costs in the same
 * database.
 *
 *   ledger:   MessageStore.insertMany as the send path calls it: BATCH rows per call (one
 *             request's envelopes to one recipient, recorded as one batch row since
 *             migration 013), message ids made as clients make them (UUIDv7, growing), on a
 *             migrated ledger.
 *   baseline: one INSERT per call of the same ids, through the same connection, into a
 *             table that holds only the key (recipient row, message id) and nothing else:
 *             no other column, no pending index or totals, no upsert (a multi-row VALUES on
 *             SQLite; on PostgreSQL one JSON parameter, as the ledger's insert takes them).
 *
 * SQLite first (a file whose WAL checkpoints run in a worker thread, as in the relay
 * server), then PostgreSQL (a throwaway server from the test harness; BENCH_SKIP_POSTGRES
 * to skip, skipped with the reason where it is not installed). The row objects are built
 * before the clock starts (the relay builds them from values it holds); the statements'
 * values, on both sides, inside it. The two take turns,
 * BENCH_ROUNDS rounds (5 by default) of BENCH_N rows each (20,000), after a warm-up of
 * each, one call at a time. Timed on the wall clock: on SQLite that is CPU on this thread
 * unless the machine is busy (check `uptime` first); on PostgreSQL it includes the round
 * trip and the server's work, which is what a send waits for.
 *
 * This is a lens on one piece of bench:relay (its ledger share, without HTTP, NATS or
 * noise from three processes), for trying ledger designs. Last line: `ledger/baseline
 * ratio: R` (µs per row of the ledger ÷ of the baseline on SQLite, the median round's).
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { newMessageId } from '@svc/shared';
import { tempDir } from '@svc/test-harness';
import { postgresUnavailable, startPostgres } from '@svc/test-harness/postgres';
import type { LedgerLocation } from '../relay/src/ledger/database.js';
import { Ledger } from '../relay/src/ledger/ledger.js';
import type { NewEnvelopeRow } from '../relay/src/ledger/messages.js';
import { SqliteDatabase } from '../relay/src/ledger/sqlite.js';
import { createStores } from '../relay/src/ledger/stores.js';
import { insertAgent, insertGrant } from '../relay/test/helpers/ledger-rows.js';
import { median } from './common.js';

const N = Number(process.env.BENCH_N ?? 20_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 100);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const WARMUP = Number(process.env.BENCH_WARMUP ?? 4_000);

// shaped as the relay's: agent rows are UUIDs, agent numbers are names their owners chose
const RECIPIENT = randomUUID();
const SENDER = randomUUID();
const TENANT = 'default';

let seq = 0;
/** n rows in calls of BATCH, with fresh message ids and stream sequences. */
function batches(n: number): NewEnvelopeRow[][] {
  const out: NewEnvelopeRow[][] = [];
  for (let i = 0; i < n; i += BATCH) {
    const b: NewEnvelopeRow[] = [];
    for (let k = 0; k < Math.min(BATCH, n - i); k++) {
      b.push({
        recipient_row: RECIPIENT,
        // a flat string, as the relay holds an id it cut from a request (newMessageId builds one up piece by piece)
        message_id: Buffer.from(newMessageId(), 'latin1').toString('latin1'),
        tenant_id: TENANT,
        recipient_number: 'recipient-number',
        sender_row: SENDER,
        sender_number: 'sender-number',
        stream_seq: ++seq,
        size: 1453,
        accepted_at: Date.now(),
      });
    }
    out.push(b);
  }
  return out;
}

/** SQLite's key-only insert of n rows, one text per n (it is also the prepared-statement cache's key). */
const keyTexts = new Map<number, string>();
function keyText(n: number): string {
  let text = keyTexts.get(n);
  if (text === undefined) {
    text = `INSERT INTO bench_keys (recipient_row, message_id) VALUES ${Array.from({ length: n }, () => '(?, ?)').join(', ')}`;
    keyTexts.set(n, text);
  }
  return text;
}
/** PostgreSQL's: the keys as one JSON parameter, one text for any n, prepared once per connection (as the ledger's insert is). */
const PG_KEYS = `INSERT INTO bench_keys (recipient_row, message_id)
  SELECT recipient_row, message_id FROM jsonb_to_recordset(?::jsonb) AS r(recipient_row text, message_id text)`;

const perRow = (t0: number, bs: NewEnvelopeRow[][]) =>
  ((performance.now() - t0) * 1000) / bs.reduce((s, b) => s + b.length, 0);

/** Measures one database; returns the median round's ledger/baseline ratio. */
async function measure(label: string, location: LedgerLocation): Promise<number> {
  const ledger = await Ledger.open(location);
  try {
    const sql = ledger.sql;
    if (sql instanceof SqliteDatabase) sql.checkpointInBackground();
    await insertGrant(sql);
    await insertAgent(sql, RECIPIENT, { agentId: 'recipient-number', tenant: TENANT });
    await insertAgent(sql, SENDER, { agentId: 'sender-number', tenant: TENANT });
    await sql.exec(
      'CREATE TABLE bench_keys (recipient_row TEXT NOT NULL, message_id TEXT NOT NULL, PRIMARY KEY (recipient_row, message_id))',
    );
    const messages = createStores(ledger).messages;

    /** µs per row to record these batches in the ledger */
    const viaLedger = async (bs: NewEnvelopeRow[][]): Promise<number> => {
      const t0 = performance.now();
      for (const b of bs) {
        const outcome = await messages.insertMany(b);
        // every id is new: a row the ledger did not record would make the figure a lie
        if ('conflict' in outcome || outcome.ignored.length > 0)
          throw new Error('bench:ledger: a row was not recorded');
      }
      return perRow(t0, bs);
    };
    /** µs per row to record only their keys */
    const viaKeys = async (bs: NewEnvelopeRow[][]): Promise<number> => {
      const t0 = performance.now();
      // the values are written inside the clock, as the ledger writes its own
      for (const b of bs) {
        const changed =
          sql.dialect === 'postgres'
            ? await sql.run(PG_KEYS, [
                JSON.stringify(b.map((r) => ({ recipient_row: r.recipient_row, message_id: r.message_id }))),
              ])
            : await sql.run(
                keyText(b.length),
                b.flatMap((r) => [r.recipient_row, r.message_id]),
              );
        if (changed !== b.length) throw new Error('bench:ledger: a key was not recorded');
      }
      return perRow(t0, bs);
    };

    await viaLedger(batches(WARMUP));
    await viaKeys(batches(WARMUP));
    const ledgerUs: number[] = [];
    const keysUs: number[] = [];
    const ratios: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const forLedger = batches(N);
      const forKeys = batches(N);
      // turns: whichever goes first in a round goes second in the next
      let l: number;
      let k: number;
      if (r % 2 === 0) {
        l = await viaLedger(forLedger);
        k = await viaKeys(forKeys);
      } else {
        k = await viaKeys(forKeys);
        l = await viaLedger(forLedger);
      }
      ledgerUs.push(l);
      keysUs.push(k);
      ratios.push(l / k);
      console.log(
        `  ${label} round ${r + 1}: ledger ${l.toFixed(2)} µs/row, baseline ${k.toFixed(2)} µs/row, ratio ${(l / k).toFixed(2)}`,
      );
    }
    const rows = (await sql.get<{ n: number }>('SELECT sum(pending_count) AS n FROM envelope_batches'))?.n;
    console.log(
      `${label}: ledger (MessageStore.insertMany) ${median(ledgerUs).toFixed(2)} µs/row, baseline (key-only table) ${median(keysUs).toFixed(2)} µs/row (medians; ${rows} rows recorded), ledger/baseline ${median(ratios).toFixed(2)}`,
    );
    return median(ratios);
  } finally {
    await ledger.close();
  }
}

console.log(`bench:ledger — ${N} rows per round in calls of ${BATCH}, ${ROUNDS} rounds`);
const dir = tempDir('svc-bench-ledger-');
let sqliteRatio: number;
try {
  sqliteRatio = await measure('SQLite', { sqlite: join(dir, 'ledger.db') });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const pgMissing = process.env.BENCH_SKIP_POSTGRES ? 'BENCH_SKIP_POSTGRES' : postgresUnavailable();
if (pgMissing) console.log(`PostgreSQL: skipped (${pgMissing})`);
else {
  const server = await startPostgres();
  try {
    await measure('PostgreSQL', { dsnFile: (await server.createDatabase()).dsnFile });
  } finally {
    await server.stop();
  }
}
console.log(`ledger/baseline ratio: ${sqliteRatio.toFixed(2)}`);
