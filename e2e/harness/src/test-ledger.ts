/**
 * The ledger of every relay the harness builds (inProcessRelay, inProcessBusRelay,
 * spawnRelay and the fleets, and the svc-relay commands runRelayCli runs on a data dir):
 * SQLite by default (ledger.db in the data dir, as a relay has it out of the box), or
 * with SVC_TEST_LEDGER=postgres (`npm run test:relay:postgres`) a PostgreSQL database of
 * its own on the run's one throwaway server (testPostgres).
 *
 * A data dir maps to one database, named for its path: a relay restarted on its data dir,
 * the operator commands run on it and the instances of a fleet sharing it find the same
 * ledger, as they find the same ledger.db. A test that sets SVC_RELAY_LEDGER_DSN_FILE
 * itself keeps its own.
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { SHARED_PG_ENV, testPostgres } from './postgres.js';

export type TestLedgerKind = 'sqlite' | 'postgres';

export function testLedger(): TestLedgerKind {
  const v = process.env.SVC_TEST_LEDGER ?? 'sqlite';
  if (v !== 'sqlite' && v !== 'postgres') throw new Error(`SVC_TEST_LEDGER must be sqlite or postgres, not "${v}"`);
  return v;
}

/** The relays of this run keep their ledger on PostgreSQL. */
export const onPostgres = (): boolean => testLedger() === 'postgres';

const canonical = (dir: string): string => {
  const abs = resolve(dir);
  try {
    return realpathSync(abs);
  } catch {
    return abs; // not created yet: the relay creates it
  }
};

const databases = new Map<string, Promise<string>>();

/**
 * The settings that put the ledger of the relay on `dataDir` where this run keeps ledgers:
 * nothing on SQLite; SVC_RELAY_LEDGER_DSN_FILE of the data dir's database on PostgreSQL.
 * Nothing either when the relay's own settings (`given`) name a ledger already.
 */
export async function ledgerEnv(
  dataDir: string,
  given: { SVC_RELAY_LEDGER_DSN_FILE?: string } = {},
): Promise<Record<string, string>> {
  if (!onPostgres() || given.SVC_RELAY_LEDGER_DSN_FILE !== undefined) return {};
  if (!process.env[SHARED_PG_ENV.onDemandDir]) {
    throw new Error(
      'SVC_TEST_LEDGER=postgres, but no PostgreSQL server: run through vitest (its global setup starts it)',
    );
  }
  const dir = canonical(dataDir);
  let dsnFile = databases.get(dir);
  if (!dsnFile) {
    const name = `svc_${createHash('sha256').update(dir).digest('hex').slice(0, 24)}`;
    dsnFile = testPostgres()
      .then((server) => server.createDatabase(name))
      .then((db) => db.dsnFile);
    databases.set(dir, dsnFile);
  }
  return { SVC_RELAY_LEDGER_DSN_FILE: await dsnFile };
}
