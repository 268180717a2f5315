/**
 * The PostgreSQL ledger's prepared statements: a statement with few parameters is parsed and
 * planned once per connection, one with many is not kept, and a statement whose table
 * changed under it (a migration by another process) still answers.
 */
import { postgresUnavailable, type TestPostgres, testPostgres } from '@svc/test-harness/postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDatabase } from './postgres.js';
import type { Sql } from './sql.js';

const missing = postgresUnavailable();

describe.skipIf(missing !== undefined)(missing === undefined ? 'PostgreSQL' : `skipped: ${missing}`, () => {
  let server: TestPostgres | undefined;
  const opened: PostgresDatabase[] = [];
  beforeAll(async () => {
    server = await testPostgres();
  }, 60_000);
  afterAll(async () => {
    for (const db of opened) await db.close();
    await server?.stop();
  });

  async function fresh(): Promise<{ db: PostgresDatabase; url: string }> {
    if (!server) throw new Error('PostgreSQL not started');
    const { url } = await server.createDatabase();
    const db = PostgresDatabase.connect(url, { max: 2 });
    opened.push(db);
    return { db, url };
  }

  /** Another process adds a column to t: a prepared `SELECT *` would now return another row type. */
  async function alter(url: string): Promise<void> {
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query("ALTER TABLE t ADD COLUMN note TEXT NOT NULL DEFAULT 'x'");
    } finally {
      await other.end();
    }
  }

  /** The statements this connection keeps prepared (the view itself takes no parameter, so it is never one). */
  const preparedTexts = async (tx: Sql): Promise<string[]> =>
    (await tx.all<{ statement: string }>('SELECT statement FROM pg_prepared_statements')).map((r) => r.statement);

  it('prepares a statement with few parameters once per connection, and not one with more than 64', async () => {
    const { db } = await fresh();
    await db.transaction(async (tx) => {
      expect(await tx.get('SELECT ?::int + ?::int AS n', [1, 2])).toEqual({ n: 3 });
      expect(await tx.get('SELECT ?::int + ?::int AS n', [3, 4])).toEqual({ n: 7 });
      const many = Array.from({ length: 65 }, (_, i) => i);
      expect(await tx.get(`SELECT ${many.map(() => '?::int').join(' + ')} AS n`, many)).toEqual({ n: (64 * 65) / 2 });
      const texts = await preparedTexts(tx);
      // once, under one name, for both calls
      expect(texts.filter((t) => t === 'SELECT $1::int + $2::int AS n')).toHaveLength(1);
      expect(texts.filter((t) => t.includes('$65'))).toEqual([]);
    });
  });

  it('keeps answering when a table changes under a prepared statement, and prepares it afresh', async () => {
    const { db, url } = await fresh();
    await db.exec('CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)');
    // prepared on every connection of the pool (two calls at once take both)
    const read = () => db.get<Record<string, unknown>>('SELECT * FROM t WHERE id = ?', [1]);
    expect(await Promise.all([read(), read()])).toEqual([{ id: 1 }, { id: 1 }]);
    await alter(url);
    expect(await Promise.all([read(), read()])).toEqual([
      { id: 1, note: 'x' },
      { id: 1, note: 'x' },
    ]);
    // prepared afresh: answered on the first try inside a transaction, and kept once
    await db.transaction(async (tx) => {
      expect(await tx.get('SELECT * FROM t WHERE id = ?', [1])).toEqual({ id: 1, note: 'x' });
      expect((await preparedTexts(tx)).filter((t) => t === 'SELECT * FROM t WHERE id = $1')).toHaveLength(1);
    });
  });

  it('runs a transaction again when a table changed under one of its prepared statements', async () => {
    if (!server) throw new Error('PostgreSQL not started');
    const { url } = await server.createDatabase();
    // one connection: the transaction's is the one that prepared the statement
    const db = PostgresDatabase.connect(url, { max: 1 });
    opened.push(db);
    await db.exec('CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)');
    expect(await db.get('SELECT * FROM t WHERE id = ?', [1])).toEqual({ id: 1 });
    await alter(url);
    let attempts = 0;
    const row = await db.transaction(async (tx) => {
      attempts++;
      return tx.get('SELECT * FROM t WHERE id = ?', [1]);
    });
    expect({ row, attempts }).toEqual({ row: { id: 1, note: 'x' }, attempts: 2 });
  });
});
