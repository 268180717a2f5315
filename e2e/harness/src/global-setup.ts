/**
 * vitest's global setup: tests run the built `svc`, `svc-relay` and `svc-daemon` as users
 * run them (a bundle starts in a tenth of the time tsx takes to compile the sources, and
 * the suite starts hundreds). `npm test` builds first; a single file run after an edit
 * builds here, so no test runs yesterday's build.
 *
 * With SVC_TEST_LEDGER=postgres it also starts the one PostgreSQL server of the run, whose
 * databases hold the ledgers of every relay the harness builds (./test-ledger.ts). One per
 * run rather than one per worker: one initdb and one server's memory on a small machine,
 * and the databases keep the test files apart anyway. The workers find it through the
 * environment, which they inherit. Without it, PostgreSQL tests still share one server,
 * started on demand by the first worker that asks (testPostgres) and stopped here, so a
 * run without them pays nothing for PostgreSQL.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, staleSource } from '../../../scripts/build-stamp.mjs';
import {
  killServerOnDemand,
  postgresUnavailable,
  SHARED_PG_ENV,
  startPostgres,
  stopServerOnDemand,
} from './postgres.js';
import { testLedger } from './test-ledger.js';

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const stale = staleSource();
  if (stale !== undefined) {
    process.stderr.write(`test setup: building first (${stale} is newer than the last build)\n`);
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  }
  if (testLedger() !== 'postgres') return postgresOnDemand();
  const missing = postgresUnavailable();
  if (missing) throw new Error(`SVC_TEST_LEDGER=postgres: ${missing}`);
  // every relay of three workers at once holds a pool (at most 10 connections, usually 1–2)
  const server = await startPostgres({ maxConnections: 400 });
  const dsnDir = join(server.dir, 'dsn');
  mkdirSync(dsnDir, { mode: 0o700 });
  process.env[SHARED_PG_ENV.adminUrl] = server.adminUrl;
  process.env[SHARED_PG_ENV.dsnDir] = dsnDir;
  process.stderr.write(`test setup: relay ledgers on PostgreSQL (port ${server.port})\n`);
  return () => server.stop();
}

/** A dir in which the first worker that asks starts the run's PostgreSQL server (none without the binaries). */
function postgresOnDemand(): (() => Promise<void>) | undefined {
  if (postgresUnavailable()) return undefined;
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const runDir = mkdtempSync(join(ROOT, '.tmp', 'test-pg-'));
  process.env[SHARED_PG_ENV.onDemandDir] = runDir;
  // a run that ends without its teardown (killed) leaves no server behind
  const onExit = () => killServerOnDemand(runDir);
  process.once('exit', onExit);
  return async () => {
    process.removeListener('exit', onExit);
    await stopServerOnDemand(runDir);
  };
}
