/**
 * vitest's global setup: tests run the built `svc`, `svc-relay` and `svc-daemon` as users
 * run them (a bundle starts in a tenth of the time tsx takes to compile the sources, and
 * the suite starts hundreds). `npm test` builds first; a single file run after an edit
 * builds here, so no test runs yesterday's build.
 *
 * It also prepares the run's one PostgreSQL server: started on demand by the first worker
 * that asks (testPostgres), stopped here, so a run without PostgreSQL tests pays nothing
 * for it. One per run rather than one per worker: one initdb and one server's memory on a
 * small machine, and the databases keep the test files apart anyway. With
 * SVC_TEST_LEDGER=postgres its databases hold the ledgers of every relay the harness
 * builds (./test-ledger.ts), so PostgreSQL must be there.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, staleSource } from '../../../scripts/build-stamp.mjs';
import { killServerOnDemand, postgresUnavailable, SHARED_PG_ENV, stopServerOnDemand } from './postgres.js';
import { onPostgres } from './test-ledger.js';

export default function setup(): (() => Promise<void>) | undefined {
  const stale = staleSource();
  if (stale !== undefined) {
    process.stderr.write(`test setup: building first (${stale} is newer than the last build)\n`);
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  }
  const missing = postgresUnavailable();
  if (missing && onPostgres()) throw new Error(`SVC_TEST_LEDGER=postgres: ${missing}`);
  if (onPostgres()) process.stderr.write('test setup: relay ledgers on PostgreSQL\n');
  return missing ? undefined : postgresOnDemand();
}

/** A dir in which the first worker that asks starts the run's PostgreSQL server. */
function postgresOnDemand(): () => Promise<void> {
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
