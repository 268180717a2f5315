/**
 * The PostgreSQL ledger: a `pg` pool, for several relay instances sharing one database.
 * The DSN (a postgres:// URL with its password) is read from a file and never logged.
 * BIGINT and numeric results come back as JavaScript numbers (the ledger's integers are
 * millisecond times, counts and sizes, all far below 2^53). Transactions run at READ
 * COMMITTED on one pooled client; a serialization failure, a deadlock or a prepared statement
 * whose table changed under it retries the whole transaction. Connection trouble surfaces
 * as `ledger_closed`, like a closed SQLite file; at open, as `ledger_unavailable` with the
 * driver's reason, for the operator.
 */
import { readFileSync } from 'node:fs';
import { SvcError } from '@svc/shared';
import pg from 'pg';
import { type Sql, type SqlDatabase, type SqlParams, toPostgres } from './sql.js';

const INT8 = 20;
const NUMERIC = 1700;

const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * SQLSTATE classes that mean the database, not the query, failed: 28 (the login refused: a
 * password changed under a running relay) and 3D (the database dropped) included.
 */
const STORE_FAILURE_CLASSES = ['08', '28', '3D', '53', '57', '58', 'XX'];
const NODE_FAILURES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);
const RETRIED = new Set(['40001', '40P01']);

/** Node gives an AggregateError when every address of a name (IPv4 and IPv6) refused: its first. */
const firstOf = (err: unknown): unknown =>
  err instanceof AggregateError && err.errors.length > 0 ? err.errors[0] : err;

function storeFailure(err: unknown): boolean {
  err = firstOf(err);
  const code = (err as { code?: string }).code ?? '';
  if (NODE_FAILURES.has(code)) return true;
  if (code.length === 5 && STORE_FAILURE_CLASSES.includes(code.slice(0, 2))) return true;
  return /Connection terminated|Cannot use a pool after calling end|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(
    (err as Error).message ?? '',
  );
}

/**
 * Why the database failed, in the driver's words made readable ("connection refused at
 * 127.0.0.1:5498", 'password authentication failed for user "svc_relay"'). Neither pg nor
 * node puts the DSN's password in a message; `where` (host:port) names the server when the
 * driver's message does not.
 */
export function failureReason(err: unknown, where?: string): string {
  const e = firstOf(err) as NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string };
  const at = e.address !== undefined ? `${e.address}${e.port === undefined ? '' : `:${e.port}`}` : where;
  switch (e.code) {
    case 'ECONNREFUSED':
      return `connection refused at ${at ?? 'the server'}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host ${e.hostname ?? at ?? ''} not found (DNS)`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${at ?? 'the server'} is unreachable (${e.code})`;
  }
  const message = (e as Error).message ?? String(err);
  if (/timeout exceeded when trying to connect/i.test(message))
    return `no answer from ${where ?? 'the server'} in time`;
  return message;
}

function toLedgerError(err: unknown): unknown {
  if (err instanceof SvcError || !storeFailure(err)) return err;
  return new SvcError('ledger_closed', undefined, { detail: failureReason(err), cause: err });
}

/** What the operator checks, by the kind of refusal. */
function openAdvice(err: unknown, where: string): string {
  const code = ((firstOf(err) as { code?: string }).code ?? '').toString();
  if (code.startsWith('28'))
    return "check the user and password in the DSN file, and that the server's pg_hba.conf lets that user in";
  if (code === '3D000') return 'check the database name in the DSN file, or create that database';
  if (NODE_FAILURES.has(code) || /timeout exceeded/i.test((firstOf(err) as Error).message ?? ''))
    return `check that PostgreSQL runs and accepts connections at ${where}, and the host and port in the DSN file`;
  return 'check the DSN file and the PostgreSQL server';
}

/**
 * Of a DSN, for messages: its server as host:port (never its user or password), and its
 * password, to keep out of any message (none of pg's is known to carry it).
 */
function dsnParts(dsn: string): { where: string; password: string } {
  let u: URL;
  try {
    u = new URL(dsn);
  } catch {
    return { where: 'the server the DSN names', password: '' };
  }
  let password = '';
  try {
    password = decodeURIComponent(u.password);
  } catch {
    // not percent-encoded as a URL's should be: nothing to look for
  }
  return { where: `${u.hostname || 'localhost'}:${u.port || '5432'}`, password };
}

/** Reads the DSN file: one postgres:// (or postgresql://) URL; the content is never echoed. */
export function readDsnFile(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new SvcError(
      'config_invalid',
      `cannot read the ledger DSN file ${file}: ${(err as NodeJS.ErrnoException).code}`,
    );
  }
  if (!/^postgres(ql)?:\/\//.test(text) || /\s/.test(text)) {
    throw new SvcError('config_invalid', `the ledger DSN file ${file} must hold one postgres:// URL`);
  }
  return text;
}

/**
 * Statements with at most this many parameters run as named prepared statements: each
 * connection parses one once, not at every call, and PostgreSQL's plan cache may keep its
 * plan (on the send path, parsing and planning the envelope insert cost more than running
 * it: bench:ledger). Every such text the relay writes is fixed or one of a few short forms,
 * so what each connection keeps is bounded; texts with more parameters (a multi-row insert
 * of many rows) run unnamed.
 */
const PREPARED_MAX_PARAMS = 64;

interface Prepared {
  name: string;
  text: string;
  /** how many `?` the SQL has; undefined when it names its parameters (`@name`) */
  positional: number | undefined;
}

/** SQL text → its prepared statement's name and PostgreSQL text, the same on every connection. */
const prepared = new Map<string, Prepared>();
let preparedNames = 0;

/** "cached plan must not change result type": a table of a prepared statement changed under it. */
const planChanged = (err: unknown): boolean =>
  (err as { code?: string }).code === '0A000' && /cached plan must not change result type/.test((err as Error).message);

function queryConfig(sql: string, params: SqlParams | undefined): pg.QueryConfig {
  const known = prepared.get(sql);
  if (known?.positional !== undefined && Array.isArray(params)) {
    const list = params as SqlParams & unknown[];
    const values = new Array(known.positional);
    for (let i = 0; i < known.positional; i++) values[i] = list[i] ?? null;
    return { name: known.name, text: known.text, values };
  }
  const { text, values } = toPostgres(sql, params);
  if (values.length === 0 || values.length > PREPARED_MAX_PARAMS) return { text, values };
  let p = known;
  if (p === undefined) {
    p = {
      name: `svc_${++preparedNames}`,
      text,
      positional: params === undefined || Array.isArray(params) ? values.length : undefined,
    };
    prepared.set(sql, p);
  }
  return { name: p.name, text, values };
}

/** Told when the database stops answering (with the driver's reason) and when it answers again. */
export interface AvailabilityListener {
  down(reason: string): void;
  up(): void;
}

/**
 * Whether the database answers, as the queries find it. Only a change is told, so that an
 * outage is logged once, not once per failing request (each of those is its own 503).
 */
class Availability {
  #down = false;
  closed = false;
  listener: AvailabilityListener | undefined;

  /** The error to throw for `err`; a store failure marks the database down. */
  failed(err: unknown): unknown {
    const e = toLedgerError(err);
    if (!this.#down && !this.closed && e instanceof SvcError && e.code === 'ledger_closed') {
      this.#down = true;
      this.listener?.down(e.detail ?? e.message);
    }
    return e;
  }

  answered(): void {
    if (!this.#down) return;
    this.#down = false;
    this.listener?.up();
  }
}

class Queries implements Sql {
  /** `alone`: each statement commits by itself (no transaction), so one can be run again */
  constructor(
    private readonly q: pg.Pool | pg.PoolClient,
    private readonly alone: boolean,
    protected readonly availability: Availability,
  ) {}

  async #query<T>(sql: string, params?: SqlParams): Promise<pg.QueryResult<T & pg.QueryResultRow>> {
    const config = queryConfig(sql, params);
    try {
      const result = await this.q.query<T & pg.QueryResultRow>(config);
      this.availability.answered();
      return result;
    } catch (err) {
      if (config.name !== undefined && planChanged(err)) {
        // The schema changed under it (a migration by another process): later calls prepare
        // it afresh, under a new name. Alone, this one is retried unprepared (the error comes
        // before it runs); in a transaction, transaction() runs the whole body again.
        prepared.delete(sql);
        if (this.alone) {
          try {
            return await this.q.query<T & pg.QueryResultRow>(config.text, config.values);
          } catch (again) {
            throw this.availability.failed(again);
          }
        }
      }
      throw this.availability.failed(err);
    }
  }

  async get<T>(sql: string, params?: SqlParams): Promise<T | undefined> {
    return (await this.#query<T>(sql, params)).rows[0];
  }

  async all<T>(sql: string, params?: SqlParams): Promise<T[]> {
    return (await this.#query<T>(sql, params)).rows;
  }

  async run(sql: string, params?: SqlParams): Promise<number> {
    return (await this.#query(sql, params)).rowCount ?? 0;
  }

  async exec(sql: string): Promise<void> {
    try {
      await this.q.query(sql);
      this.availability.answered();
    } catch (err) {
      throw this.availability.failed(err);
    }
  }
}

export class PostgresDatabase extends Queries implements SqlDatabase {
  readonly dialect = 'postgres' as const;
  readonly pool: pg.Pool;
  #open = true;

  private constructor(pool: pg.Pool, availability: Availability) {
    super(pool, true, availability);
    this.pool = pool;
  }

  /** Tells `listener` when the database stops answering and when it answers again (the relay logs both). */
  onAvailability(listener: AvailabilityListener): void {
    this.availability.listener = listener;
  }

  /**
   * Reads the DSN file, and connects once, so that a server that refuses the relay (down,
   * wrong password, unknown database) is reported at start with its reason, not later as a
   * client-facing `ledger_closed`.
   */
  static async open(dsnFile: string, opts: { max?: number } = {}): Promise<PostgresDatabase> {
    const dsn = readDsnFile(dsnFile);
    const db = PostgresDatabase.connect(dsn, opts);
    try {
      (await db.pool.connect()).release();
    } catch (err) {
      await db.close().catch(() => undefined);
      const { where, password } = dsnParts(dsn);
      const reason = password ? failureReason(err, where).split(password).join('***') : failureReason(err, where);
      throw new SvcError(
        'ledger_unavailable',
        `the PostgreSQL ledger named by the DSN file ${dsnFile} could not be opened: ${reason}; ${openAdvice(err, where)}`,
        { detail: reason, cause: err },
      );
    }
    return db;
  }

  static connect(connectionString: string, opts: { max?: number } = {}): PostgresDatabase {
    const pool = new pg.Pool({ connectionString, types, max: opts.max ?? 10, connectionTimeoutMillis: 5000 });
    // An idle client losing its connection must not crash the relay; the next query reports it.
    pool.on('error', () => undefined);
    return new PostgresDatabase(pool, new Availability());
  }

  get isOpen(): boolean {
    return this.#open;
  }

  async close(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    // what fails from now on is the shutdown, not an outage
    this.availability.closed = true;
    await this.pool.end();
  }

  async transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T> {
    if (!this.#open) throw new SvcError('ledger_closed', undefined, { detail: 'pool is closed' });
    for (let attempt = 1; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (err) {
        throw this.availability.failed(err);
      }
      let broken = false;
      try {
        await client.query('BEGIN');
        const value = await fn(new Queries(client, false, this.availability));
        await client.query('COMMIT');
        this.availability.answered();
        return value;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        const code = (err as { code?: string }).code ?? (err as { cause?: { code?: string } }).cause?.code ?? '';
        if ((RETRIED.has(code) || planChanged(err)) && attempt < 5) continue;
        throw this.availability.failed(err);
      } finally {
        client.release(broken);
      }
    }
  }

  /** Holds a session-level advisory lock on one client while `fn` runs (migrations at start). */
  async withLock<T>(key: number, fn: (sql: Sql) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((err: unknown) => {
      throw this.availability.failed(err);
    });
    try {
      await client.query('SELECT pg_advisory_lock($1)', [key]);
      try {
        return await fn(new Queries(client, true, this.availability));
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => undefined);
      }
    } finally {
      client.release();
    }
  }
}
