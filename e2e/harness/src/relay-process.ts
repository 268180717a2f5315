/**
 * Runs the real `svc-relay` binary (the built one: ./bins.ts) as a
 * child process on a free port and a temp data dir. Its log is kept in the data dir.
 * Its ledger, and that of the commands run on a data dir, is the run's test ledger
 * (./test-ledger.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RELAY_BIN } from './bins.js';
import { type ChildResult, freePort, runChild, signalIfAlive, tempDir } from './index.js';
import { ledgerEnv } from './test-ledger.js';

const NODE_ARGS = [RELAY_BIN];

export type CliResult = ChildResult;

/** The process environment without any relay setting: only what the command line says. */
export const bareEnv = (): Record<string, string> =>
  Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => !e[0].startsWith('SVC_RELAY_') && e[1] !== undefined,
    ),
  );

/** The value of `--flag v` or `--flag=v` on a command line. */
function flagValue(args: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === flag) return args[i + 1];
    if (a.startsWith(`${flag}=`)) return a.slice(flag.length + 1);
  }
  return undefined;
}

/**
 * The test ledger's settings for a command line: its data dir from --data-dir, else the
 * environment, else the relay's default (./.svc-relay in the working directory).
 */
function commandLedgerEnv(args: readonly string[], env: Record<string, string>, cwd?: string) {
  if (flagValue(args, '--ledger-dsn-file') !== undefined || flagValue(args, '--ledger-db') !== undefined) {
    return Promise.resolve({});
  }
  const dataDir = flagValue(args, '--data-dir') ?? env.SVC_RELAY_DATA_DIR ?? '.svc-relay';
  return ledgerEnv(resolve(cwd ?? process.cwd(), dataDir), env);
}

/**
 * Runs one svc-relay command to completion, with `env` over this process's environment
 * (or over `bareEnv()` with `bare`), from `cwd` when given.
 */
export async function runRelayCli(
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string; bare?: boolean; timeoutMs?: number } = {},
): Promise<CliResult> {
  const full = { ...(options.bare ? bareEnv() : process.env), ...env } as Record<string, string>;
  return runChild(process.execPath, [...NODE_ARGS, ...args], {
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
    env: { ...full, ...(await commandLedgerEnv(args, full, options.cwd)) },
  });
}

/**
 * An enrollment code minted by `svc-relay grant` on the relay's data dir, as an operator
 * does; `flags` adds to the command line (`--tenant`, `--capability` …).
 */
export async function grantCode(
  relay: { env: Record<string, string> },
  agentId: string,
  flags: string[] = [],
): Promise<string> {
  const g = await runRelayCli(['grant', '--agent-id', agentId, ...flags, '--json'], relay.env);
  if (g.code !== 0) throw new Error(`svc-relay grant failed (${g.code}): ${g.stdout}${g.stderr}`);
  return (JSON.parse(g.stdout) as { enrollment_code: string }).enrollment_code;
}

export interface RelayProcess {
  url: string;
  port: number;
  dataDir: string;
  env: Record<string, string>;
  child: ChildProcess;
  /** everything the process printed on stdout so far */
  stdout(): string;
  logFile: string;
  natsPid(): number;
  /** sends the signal and waits for exit; returns the exit code */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface SpawnRelayOptions {
  dataDir?: string;
  env?: Record<string, string>;
  command?: 'serve' | 'dev';
  args?: string[];
  /** run `deployment init` first (serve needs a deployment) */
  init?: boolean;
  /** listen on this port (a restart keeps its public URL, which issued the tokens) */
  port?: number;
  /** working directory (relative paths in the settings are relative to it) */
  cwd?: string;
}

export async function spawnRelay(options: SpawnRelayOptions = {}): Promise<RelayProcess> {
  const dataDir = options.dataDir ?? tempDir('svc-relay-test-');
  const port = options.port ?? (await freePort());
  const env: Record<string, string> = {
    SVC_RELAY_DATA_DIR: dataDir,
    SVC_RELAY_LOG_LEVEL: 'debug',
    ...(await commandLedgerEnv(options.args ?? [], { SVC_RELAY_DATA_DIR: dataDir, ...options.env }, options.cwd)),
    ...options.env,
    // always a fresh port (a restart passes the previous env back in)
    SVC_RELAY_LISTEN: `127.0.0.1:${port}`,
  };
  const command = options.command ?? 'serve';
  if (command === 'serve' && options.init !== false) {
    const init = await runRelayCli(['deployment', 'init', '--json'], env, { cwd: options.cwd });
    if (init.code !== 0 && !/already holds deployment/.test(init.stdout + init.stderr)) {
      throw new Error(`deployment init failed: ${init.stdout}${init.stderr}`);
    }
  }
  const logFile = join(dataDir, `relay-${port}-${Date.now()}.log`);
  const log = createWriteStream(logFile);
  const child = spawn(process.execPath, [...NODE_ARGS, command, ...(options.args ?? [])], {
    cwd: options.cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.pipe(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  // A slow start is not a failure: at the suite's load peaks (PostgreSQL, Chromium and other
  // relays starting at once on two cores) a relay once took 19 s to log its first line and
  // missed a 30 s deadline. A relay that never answers still fails here, with its log.
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`svc-relay exited early (${child.exitCode}); log: ${logFile}`);
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      reapNats(dataDir);
      throw new Error(`svc-relay did not become ready; log: ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  if (command === 'dev') {
    // dev prints its banner (with the enrollment code) right after listening; this line ends it
    while (!out.includes('Mint more with:') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    port,
    dataDir,
    env,
    child,
    stdout: () => out,
    logFile,
    natsPid: () => Number(readFileSync(join(dataDir, 'nats', 'nats-server.pid'), 'utf8').trim()),
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      // a relay that does not exit leaves a hook timing out with nothing said: say which (a
      // diagnosis, not a limit: the test still waits, and fails if it never exits)
      const slow = setTimeout(
        () => console.error(`relay process ${child.pid} has not exited 20 s after ${signal} (data dir ${dataDir})`),
        20_000,
      );
      const code = await exited.finally(() => clearTimeout(slow));
      // A relay killed without cleanup leaves its (detached) nats-server behind: reap it.
      if (signal === 'SIGKILL') reapNats(dataDir);
      return code;
    },
  };
}

function reapNats(dataDir: string): void {
  try {
    const pid = Number(readFileSync(join(dataDir, 'nats', 'nats-server.pid'), 'utf8').trim());
    if (pid > 0) signalIfAlive(pid, 'SIGTERM');
  } catch {
    // no pid file: nothing to reap
  }
}

export interface RelayFleetOptions {
  /** instances, default 2 */
  count?: number;
  /** the shared bus: NatsCluster.relayEnv() */
  natsEnv: Record<string, string>;
  /**
   * Where the shared ledger is: nothing (default) = the SQLite ledger.db in the shared data
   * dir (WAL, busy timeout); a PostgreSQL ledger's settings once the relay has one.
   */
  ledgerEnv?: Record<string, string>;
  /** further settings for every instance */
  env?: Record<string, string>;
  dataDir?: string;
}

/**
 * Several relay processes as one relay behind a load balancer: one data dir (deployment,
 * relay key, the tenants' NATS account keys), one ledger, one external NATS, one public
 * URL (the first instance's address, which issued tokens name), each on its own port.
 */
export async function spawnRelayFleet(options: RelayFleetOptions): Promise<RelayProcess[]> {
  const count = options.count ?? 2;
  const dataDir = options.dataDir ?? tempDir('svc-relay-fleet-');
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  const env = {
    SVC_RELAY_PUBLIC_URL: `http://127.0.0.1:${ports[0]}`,
    ...options.natsEnv,
    ...options.ledgerEnv,
    ...options.env,
  };
  const fleet: RelayProcess[] = [];
  try {
    // the first one creates the deployment and the tenant accounts; the others find them
    for (const port of ports) fleet.push(await spawnRelay({ dataDir, port, env, init: fleet.length === 0 }));
  } catch (err) {
    await Promise.all(fleet.map((r) => r.stop()));
    throw err;
  }
  return fleet;
}
