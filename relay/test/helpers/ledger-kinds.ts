/**
 * Runs a ledger test suite on both databases: SQLite (in memory) and PostgreSQL (the
 * run's one throwaway server from the test harness; a fresh database per `fresh()`).
 * Where the PostgreSQL binaries are missing its half is skipped, with the reason in its name.
 */
import { postgresUnavailable, type TestPostgres, testPostgres } from '@svc/test-harness/postgres';
import { afterAll, beforeAll, describe } from 'vitest';
import { PostgresDatabase } from '../../src/ledger/postgres.js';
import type { SqlDatabase } from '../../src/ledger/sql.js';
import { SqliteDatabase } from '../../src/ledger/sqlite.js';

export type LedgerKind = 'sqlite' | 'postgres';

export interface LedgerUnderTest {
  kind: LedgerKind;
  /** a new, empty database of this kind (closed after the file) */
  fresh(): Promise<SqlDatabase>;
}

/** The same refusal, as each database words it. */
export const REFUSED = {
  unique: /UNIQUE|PRIMARY KEY|unique constraint/,
  check: /CHECK|check constraint/,
  foreignKey: /FOREIGN KEY|foreign key constraint/,
  type: /cannot store TEXT value in INTEGER column|invalid input syntax for type (integer|bigint)/,
};

export function eachLedger(body: (ledger: LedgerUnderTest) => void): void {
  const missing = postgresUnavailable();
  let server: TestPostgres | undefined;
  const opened: SqlDatabase[] = [];
  afterAll(async () => {
    for (const db of opened) await db.close();
    await server?.stop();
  });
  describe.each<LedgerKind>(['sqlite', 'postgres'])('on %s', (kind) => {
    const skip = kind === 'postgres' ? missing : undefined;
    describe.skipIf(skip !== undefined)(skip === undefined ? 'ledger' : `skipped: ${skip}`, () => {
      if (kind === 'postgres') {
        beforeAll(async () => {
          server ??= await testPostgres();
        }, 60_000);
      }
      body({
        kind,
        async fresh() {
          let db: SqlDatabase;
          if (kind === 'sqlite') db = SqliteDatabase.open(':memory:');
          else {
            if (!server) throw new Error('PostgreSQL not started');
            db = PostgresDatabase.connect((await server.createDatabase()).url, { max: 4 });
          }
          opened.push(db);
          return db;
        },
      });
    });
  });
}

/** Whether the database would answer `sql` through `index` (PostgreSQL: with sequential scans off). */
export async function usesIndex(db: SqlDatabase, sql: string, index: string): Promise<boolean> {
  if (db.dialect === 'sqlite') {
    const plan = await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`);
    return plan.some((p) => p.detail.includes(index));
  }
  const plan = await db.transaction(async (tx) => {
    await tx.exec('SET LOCAL enable_seqscan = off');
    return tx.all<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`);
  });
  return plan.some((p) => p['QUERY PLAN'].includes(index));
}
