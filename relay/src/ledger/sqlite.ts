/**
 * The SQLite ledger (better-sqlite3, WAL): the embedded default. better-sqlite3 is
 * synchronous and has one connection, so an asynchronous transaction must not interleave
 * with other work on it: while a transaction runs, every other query and transaction waits
 * its turn in one queue. Outside transactions a query runs at once.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { SvcError } from '@svc/shared';
import Database from 'better-sqlite3';
import { type Checkpointer, startCheckpointer } from './checkpointer.js';
import type { Sql, SqlDatabase, SqlParams } from './sql.js';

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

const bind = (params: SqlParams | undefined): unknown[] =>
  params === undefined ? [] : Array.isArray(params) ? params : [params];

export class SqliteDatabase implements SqlDatabase {
  readonly dialect = 'sqlite' as const;
  readonly db: Db;
  readonly #statements = new Map<string, Database.Statement>();
  /** the tail of the queue of transactions (and of queries that arrived while one ran) */
  #queue: Promise<void> = Promise.resolve();
  #transactions = 0;
  /** the queries of the running transaction: straight on the connection */
  readonly #direct: Sql;
  #checkpointer: Checkpointer | undefined;

  constructor(db: Db) {
    this.db = db;
    this.#direct = {
      get: async <T>(sql: string, params?: SqlParams) => this.#get<T>(sql, params),
      all: async <T>(sql: string, params?: SqlParams) => this.#all<T>(sql, params),
      run: async (sql: string, params?: SqlParams) => this.#run(sql, params),
      exec: async (sql: string) => this.#exec(sql),
    };
  }

  static open(file: string): SqliteDatabase {
    return new SqliteDatabase(openDatabase(file));
  }

  get isOpen(): boolean {
    return this.db.open;
  }

  async close(): Promise<void> {
    await this.#queue;
    await this.#checkpointer?.stop();
    // the last connection to close checkpoints what is left
    if (this.db.open) this.db.close();
  }

  /**
   * Moves WAL checkpoints to a worker thread (see checkpointer.ts): for the relay server,
   * not for a command that opens the ledger for a moment. Should the worker fail, this
   * connection checkpoints by itself again, as SQLite does by default.
   */
  checkpointInBackground(everyMs = 250): void {
    if (this.#checkpointer || this.db.memory || !this.db.open) return;
    this.#checkpointer = startCheckpointer(this.db.name, everyMs, () => {
      if (this.db.open) this.db.pragma('wal_autocheckpoint = 1000');
    });
    this.db.pragma('wal_autocheckpoint = 0');
  }

  /** A prepared statement, compiled once per SQL text (preparing costs more than running). */
  #stmt(sql: string): Database.Statement {
    let st = this.#statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.#statements.set(sql, st);
    }
    return st;
  }

  #get<T>(sql: string, params?: SqlParams): T | undefined {
    return guard(this.db, () => this.#stmt(sql).get(...bind(params)) as T | undefined);
  }

  #all<T>(sql: string, params?: SqlParams): T[] {
    return guard(this.db, () => this.#stmt(sql).all(...bind(params)) as T[]);
  }

  #run(sql: string, params?: SqlParams): number {
    return guard(this.db, () => this.#stmt(sql).run(...bind(params)).changes);
  }

  #exec(sql: string): void {
    guard(this.db, () => this.db.exec(sql));
  }

  /** Runs `op` now, or after the transactions queued before it. */
  #outside<T>(op: () => T): Promise<T> {
    if (this.#transactions === 0) {
      try {
        return Promise.resolve(op());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const p = this.#queue.then(op);
    this.#queue = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  }

  get<T>(sql: string, params?: SqlParams): Promise<T | undefined> {
    return this.#outside(() => this.#get<T>(sql, params));
  }

  all<T>(sql: string, params?: SqlParams): Promise<T[]> {
    return this.#outside(() => this.#all<T>(sql, params));
  }

  run(sql: string, params?: SqlParams): Promise<number> {
    return this.#outside(() => this.#run(sql, params));
  }

  exec(sql: string): Promise<void> {
    return this.#outside(() => this.#exec(sql));
  }

  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    this.#transactions++;
    const body = async (): Promise<T> => {
      // prepared once, as every statement here: exec compiled them again each time (a send's
      // transaction is a handful of statements)
      guard(this.db, () => this.#stmt('BEGIN IMMEDIATE').run());
      try {
        const value = await fn(this.#direct);
        guard(this.db, () => this.#stmt('COMMIT').run());
        return value;
      } catch (err) {
        if (this.db.open && this.db.inTransaction) this.db.exec('ROLLBACK');
        throw err;
      }
    };
    const p = this.#queue.then(body);
    this.#queue = p.then(
      () => undefined,
      () => undefined,
    );
    void this.#queue.then(() => {
      this.#transactions--;
    });
    return p;
  }
}
