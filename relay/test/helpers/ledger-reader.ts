/**
 * A relay's ledger read from outside the relay, as an operator's query would: the SQLite
 * ledger.db of its data dir, or the PostgreSQL database the test harness gave that data
 * dir (SVC_TEST_LEDGER=postgres). Opened on first use; close() it after the file.
 */
import { join } from 'node:path';
import { ledgerEnv } from '@svc/test-harness/test-ledger';
import { openSql } from '../../src/ledger/database.js';
import type { SqlDatabase, SqlParams } from '../../src/ledger/sql.js';

export interface LedgerReader {
  get<T>(sql: string, params?: SqlParams): Promise<T | undefined>;
  close(): Promise<void>;
}

export function ledgerReader(dataDir: () => string): LedgerReader {
  let db: Promise<SqlDatabase> | undefined;
  const open = async (): Promise<SqlDatabase> => {
    const dsnFile = (await ledgerEnv(dataDir())).SVC_RELAY_LEDGER_DSN_FILE;
    return openSql(dsnFile === undefined ? { sqlite: join(dataDir(), 'ledger.db') } : { dsnFile });
  };
  return {
    async get<T>(sql: string, params?: SqlParams) {
      db ??= open();
      return (await db).get<T>(sql, params);
    },
    async close() {
      await (await db)?.close();
      db = undefined;
    },
  };
}
