/**
 * The run's on-demand PostgreSQL server (default runs, SVC_TEST_LEDGER unset): the first
 * worker that asks starts it, every other asker gets the same one, and the global setup's
 * teardown stops it and removes its files; a run in which nobody asks starts none.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabaseOn, postgresUnavailable, serverOnDemand, stopServerOnDemand } from '@svc/test-harness/postgres';
import pg from 'pg';
import { expect, it } from 'vitest';

const missing = postgresUnavailable();

it.skipIf(missing !== undefined)('one server for every asker, stopped and removed by the teardown', async () => {
  const runDir = mkdtempSync(join(tmpdir(), 'svc-pg-run-'));
  // two workers asking at once: one starts it, the other waits for it
  const [first, second] = await Promise.all([serverOnDemand(runDir), serverOnDemand(runDir)]);
  expect(second).toEqual(first);
  const db = await createDatabaseOn(first.adminUrl, undefined, first.dsnDir);
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  await c.end();

  await stopServerOnDemand(runDir);
  await expect(new pg.Client({ connectionString: first.adminUrl }).connect()).rejects.toThrow();
  expect(existsSync(first.dir)).toBe(false);
  expect(existsSync(runDir)).toBe(false);
});

it('a run in which no file asks starts no server', async () => {
  const runDir = mkdtempSync(join(tmpdir(), 'svc-pg-run-'));
  await stopServerOnDemand(runDir);
  expect(existsSync(runDir)).toBe(false);
});
