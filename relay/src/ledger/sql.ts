/**
 * The one ledger connection interface, asynchronous, with two implementations: SQLite
 * (better-sqlite3, the embedded default; sqlite.ts) and PostgreSQL (a `pg` pool; postgres.ts).
 * Stores write their SQL once with `?` (positional) or `@name` (named) parameters; the
 * PostgreSQL side rewrites them to `$n`. Where the dialects differ a store asks `dialect`.
 * Every store failure (closed, I/O, connection lost) surfaces as `ledger_closed` (503).
 */

export type SqlValue = string | number | null;
export type SqlParams = readonly SqlValue[] | Readonly<Record<string, SqlValue>>;

/** Queries on the database, or inside one transaction. */
export interface Sql {
  get<T>(sql: string, params?: SqlParams): Promise<T | undefined>;
  all<T>(sql: string, params?: SqlParams): Promise<T[]>;
  /** Runs a change; resolves to the number of rows it changed. */
  run(sql: string, params?: SqlParams): Promise<number>;
  /** Runs SQL without parameters, several statements allowed (migrations). */
  exec(sql: string): Promise<void>;
}

export type Dialect = 'sqlite' | 'postgres';

export interface SqlDatabase extends Sql {
  readonly dialect: Dialect;
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws.
   * Inside, use only the `tx` it is given (the database itself waits for the transaction).
   */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  readonly isOpen: boolean;
  close(): Promise<void>;
}

/**
 * PostgreSQL text for SQL written with `?` or `@name` parameters: `$n`, and the values in
 * that order. Quoted literals and identifiers are left alone.
 */
export function toPostgres(sql: string, params: SqlParams | undefined): { text: string; values: SqlValue[] } {
  const values: SqlValue[] = [];
  const named = new Map<string, number>();
  let positional = 0;
  const text = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\?|@([A-Za-z_][A-Za-z0-9_]*)/g, (token, name?: string) => {
    if (token.startsWith("'") || token.startsWith('"')) return token;
    if (name === undefined) {
      if (!Array.isArray(params)) throw new Error('positional parameter without an array of values');
      values.push((params as readonly SqlValue[])[positional++] ?? null);
      return `$${values.length}`;
    }
    if (params === undefined || Array.isArray(params)) throw new Error(`named parameter @${name} without values`);
    let n = named.get(name);
    if (n === undefined) {
      const v = (params as Readonly<Record<string, SqlValue>>)[name];
      if (v === undefined) throw new Error(`missing value for @${name}`);
      values.push(v);
      n = values.length;
      named.set(name, n);
    }
    return `$${n}`;
  });
  return { text, values };
}
