/**
 * vitest's global setup: tests run the built `svc`, `svc-relay` and `svc-daemon` as users
 * run them (a bundle starts in a tenth of the time tsx takes to compile the sources, and
 * the suite starts hundreds). `npm test` builds first; a single file run after an edit
 * builds here, so no test runs yesterday's build.
 */
import { execFileSync } from 'node:child_process';
import { ROOT, staleSource } from '../../../scripts/build-stamp.mjs';

export default function setup(): void {
  const stale = staleSource();
  if (stale === undefined) return;
  process.stderr.write(`test setup: building first (${stale} is newer than the last build)\n`);
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
}
