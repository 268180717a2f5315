/**
 * Opening the ledger (SQLite file or PostgreSQL pool) and applying its numbered
 * migrations at start. Both databases keep the applied versions in `schema_migrations`;
 * a database newer than this code is refused. On PostgreSQL the relays starting at once
 * take turns through an advisory lock, so each migration runs once.
 */
import { SvcError } from '@svc/shared';
import { MIGRATIONS, type Migration } from './migrations/index.js';
import { PostgresDatabase } from './postgres.js';
import type { Sql, SqlDatabase } from './sql.js';
import { SqliteDatabase } from './sqlite.js';

export { type Db, guard, openDatabase } from './sqlite.js';

/** Where the ledger lives: a SQLite file (the default) or a PostgreSQL DSN file. */
export type LedgerLocation = { sqlite: string } | { dsnFile: string };

/** Any 64-bit key naming the migration lock; the same in every relay. */
const MIGRATION_LOCK = 0x5_7c_1ed9;

const SCHEMA_TABLE: Record<SqlDatabase['dialect'], string> = {
  sqlite:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT',
  postgres:
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
};

export async function openSql(location: LedgerLocation): Promise<SqlDatabase> {
  return 'sqlite' in location ? SqliteDatabase.open(location.sqlite) : PostgresDatabase.open(location.dsnFile);
}

async function migrateOn(
  conn: Sql,
  dialect: SqlDatabase['dialect'],
  inTransaction: (fn: (tx: Sql) => Promise<void>) => Promise<void>,
  migrations: readonly Migration[],
): Promise<number[]> {
  await conn.exec(SCHEMA_TABLE[dialect]);
  const applied = new Set(
    (await conn.all<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version),
  );
  const latest = Math.max(0, ...applied);
  const known = Math.max(0, ...migrations.map((m) => m.version));
  if (latest > known) {
    throw new SvcError(
      'config_invalid',
      `the ledger is at schema version ${latest}, newer than this relay knows (${known}); upgrade svc-relay`,
    );
  }
  const ran: number[] = [];
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue;
    const unchecked = dialect === 'sqlite' && m.withoutForeignKeys === true;
    // (a no-op inside a transaction: it is set before this one begins)
    if (unchecked) await conn.exec('PRAGMA foreign_keys = OFF');
    try {
      await inTransaction(async (tx) => {
        await tx.exec(dialect === 'postgres' ? (m.postgres ?? m.up) : m.up);
        if (unchecked) await refuseBrokenForeignKeys(tx, m);
        await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
          m.version,
          m.name,
          Date.now(),
        ]);
      });
    } finally {
      if (unchecked) await conn.exec('PRAGMA foreign_keys = ON');
    }
    ran.push(m.version);
  }
  return ran;
}

/** SQLite: fails the migration (which rolls it back) when any row's foreign key points at nothing. */
async function refuseBrokenForeignKeys(tx: Sql, m: Migration): Promise<void> {
  const broken = await tx.all<{ table: string; parent: string }>('PRAGMA foreign_key_check');
  if (broken.length === 0) return;
  const first = broken[0] as { table: string; parent: string };
  throw new SvcError(
    'config_invalid',
    `ledger migration ${m.version} (${m.name}) left ${broken.length} row(s) whose foreign key points at nothing (first: ${first.table} → ${first.parent}); nothing was changed`,
  );
}

/** Applies the migrations not yet applied, in order; returns the versions it ran. */
export async function migrate(db: SqlDatabase, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  if (db instanceof PostgresDatabase) {
    return db.withLock(MIGRATION_LOCK, (conn) =>
      migrateOn(
        conn,
        'postgres',
        async (fn) => {
          await conn.exec('BEGIN');
          try {
            await fn(conn);
            await conn.exec('COMMIT');
          } catch (err) {
            await conn.exec('ROLLBACK').catch(() => undefined);
            throw err;
          }
        },
        migrations,
      ),
    );
  }
  return migrateOn(db, db.dialect, (fn) => db.transaction(fn), migrations);
}
