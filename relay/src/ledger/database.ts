/**
 * The ledger's SQLite database (WAL). Every failure of the store itself (closed,
 * I/O, corruption, locked past the busy timeout) becomes `ledger_closed` (503),
 * which is distinct from a refusal: the client retries, the operator inspects.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { SvcError } from '@svc/shared';
import Database from 'better-sqlite3';
import { MIGRATIONS, type Migration } from './migrations/index.js';

export type Db = Database.Database;

/**
 * The ledger holds webhook secrets and key hashes: its file is the relay user's alone
 * (0600), whatever the mode of the directory it lives in. SQLite gives the -wal and -shm
 * files the mode of the database file; ones left by an older relay are tightened too.
 */
function makePrivate(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    if (existsSync(f)) chmodSync(f, 0o600);
  }
}

export function openDatabase(file: string): Db {
  if (file !== ':memory:') {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    makePrivate(file);
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.pragma('synchronous = NORMAL');
  return db;
}

export function migrate(db: Db, migrations: readonly Migration[] = MIGRATIONS): number[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT',
  );
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version),
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
    db.transaction(() => {
      db.exec(m.up);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        m.version,
        m.name,
        Date.now(),
      );
    })();
    ran.push(m.version);
  }
  return ran;
}

const STORE_FAILURES = new Set([
  'SQLITE_IOERR',
  'SQLITE_CORRUPT',
  'SQLITE_CANTOPEN',
  'SQLITE_NOTADB',
  'SQLITE_FULL',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_READONLY',
  'SQLITE_PROTOCOL',
]);

/** Runs a ledger operation, turning store failures into ledger_closed. */
export function guard<T>(db: Db, fn: () => T): T {
  if (!db.open) throw new SvcError('ledger_closed', undefined, { detail: 'database connection is closed' });
  try {
    return fn();
  } catch (err) {
    if (err instanceof SvcError) throw err;
    const code = (err as { code?: string }).code ?? '';
    // Extended codes (SQLITE_IOERR_WRITE) belong to their primary family.
    const family = code.split('_').slice(0, 2).join('_');
    if (!db.open || STORE_FAILURES.has(family) || /not open/i.test((err as Error).message)) {
      throw new SvcError('ledger_closed', undefined, { detail: `${code}: ${(err as Error).message}`, cause: err });
    }
    throw err;
  }
}
