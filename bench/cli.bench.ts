/**
 * bench:cli — how long one `svc` process takes, whole, as a script calling it in a loop
 * sees it: `node -e 0` (the floor), `svc --version`, `svc send` and `svc inbox --json`
 * against a warm daemon. A real relay (`svc-relay serve`, its nats-server) and two agents
 * on their own SVC_HOMEs, enrolled as e2e/test/two-agents.test.ts does; each figure is the
 * median of BENCH_RUNS runs (default 25) of the built CLI, cli/bin/svc.cjs, as npm links it.
 *
 * Last line: `svc send overhead: N ms over node`.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { registerWithCli } from '@svc/test-harness/cli-agents';
import { spawnRelay } from '@svc/test-harness/relay-process';
import { type Home, newHome, svc } from '@svc/test-harness/svc-cli';
import { median, requireCliBundle } from './common.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 25);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SVC = join(ROOT, 'cli', 'bin', 'svc.cjs');

requireCliBundle('bench:cli');

/** Wall time of one process, start to exit, in ms; it must succeed. */
function once(args: string[], env: NodeJS.ProcessEnv): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stdout}${r.stderr}`);
  return ms;
}

/**
 * The median of RUNS runs of each command, after one warm-up run of each (page cache,
 * daemon connection). The commands take turns, run by run, so a machine busy with other
 * work slows them alike and the differences hold.
 */
function timeAll(commands: Array<[string, string[], NodeJS.ProcessEnv]>): Array<[string, number]> {
  for (const [, args, env] of commands) once(args, env);
  const times = commands.map((): number[] => []);
  for (let i = 0; i < RUNS; i++) {
    for (const [c, [, args, env]] of commands.entries()) times[c]?.push(once(args, env));
  }
  return commands.map(([what], c) => [what, median(times[c] as number[])]);
}

const relay = await spawnRelay();
const homes: Home[] = [newHome('bench-alice'), newHome('bench-bob')];
try {
  await Promise.all(
    homes.map((home, i) => registerWithCli(relay, home, i === 0 ? 'alice' : 'bob', { grantFlags: [] })),
  );
  const [alice, bob] = homes.map((h) => ({ ...process.env, ...h.env })) as [NodeJS.ProcessEnv, NodeJS.ProcessEnv];
  console.log(`bench:cli: median of ${RUNS} runs each, whole process, daemon warm, taking turns (${SVC})`);
  const results = timeAll([
    ['node -e 0', ['-e', '0'], process.env],
    ['svc --version', [SVC, '--version'], process.env],
    ['svc send bob -m … --json', [SVC, 'send', 'bob', '-m', 'bench', '--json'], alice],
    ['svc inbox --json', [SVC, 'inbox', '--json'], bob],
  ]);
  const node = results[0]?.[1] as number;
  for (const [what, ms] of results) {
    const over = what === 'node -e 0' ? '' : `  (+${(ms - node).toFixed(0)} ms over node)`;
    console.log(`  ${what.padEnd(26)} ${ms.toFixed(1).padStart(7)} ms${over}`);
  }
  console.log(`svc send overhead: ${Math.round((results[2]?.[1] as number) - node)} ms over node`);
} finally {
  for (const home of homes) await svc(home, ['--no-autostart', 'stop']).catch(() => undefined);
  await relay.stop();
  for (const home of homes) rmSync(home.dir, { recursive: true, force: true });
  rmSync(relay.dataDir, { recursive: true, force: true });
}
