/**
 * The real `svc` CLI (the built one users run: ./bins.ts) as child processes, one temp
 * SVC_HOME per agent, each autostarting its own daemon with the file vault; polling with
 * deadlines; the logs to print when a test fails.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SVC_BIN } from './bins.js';
import { runChild, tempDir } from './index.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const NODE_ARGS = [SVC_BIN];

export interface SvcResult {
  args: string[];
  code: number | null;
  stdout: string;
  stderr: string;
}

/** One agent's machine: its SVC_HOME and the environment every `svc` there runs with. */
export interface Home {
  label: string;
  dir: string;
  env: Record<string, string>;
}

export function newHome(label: string): Home {
  const dir = tempDir(`svc-e2e-${label}-`);
  return {
    label,
    dir,
    env: {
      SVC_HOME: dir,
      SVC_VAULT_BACKEND: 'file',
      SVC_VAULT_PASSPHRASE: `e2e passphrase of ${label}`,
      SVC_DAEMON_LOG_LEVEL: 'debug',
      // receipts and reconnects within a test's patience (as startDaemon's in-process
      // daemons), not up to 5 s apart
      SVC_DAEMON_RECEIPTS_POLL_MS: '200',
      SVC_DAEMON_RECONNECT_MAX_MS: '500',
      SVC_AGENT: '',
    },
  };
}

export const daemonLog = (home: Home): string => join(home.dir, 'logs', 'daemon.log');

/** The pid in $SVC_HOME/run/daemon.pid, if the daemon wrote one. */
export function daemonPid(home: Home): number | undefined {
  const file = join(home.dir, 'run', 'daemon.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function spawnSvc(home: Home, args: string[]): ChildProcess {
  return spawn(process.execPath, [...NODE_ARGS, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...home.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs one `svc` command to completion (killed after timeoutMs). */
export async function svc(home: Home, args: string[], timeoutMs = 45_000): Promise<SvcResult> {
  const r = await runChild(process.execPath, [...NODE_ARGS, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...home.env },
    timeoutMs,
  });
  return { args, ...r };
}

const show = (r: SvcResult) =>
  `svc ${r.args.join(' ')} → exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`;

/** `svc … --json` that must succeed: its stdout parsed as JSON. */
export async function svcJson<T = unknown>(home: Home, args: string[]): Promise<T> {
  const r = await svc(home, args);
  if (r.code !== 0) throw new Error(`[${home.label}] ${show(r)}`);
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`[${home.label}] stdout is not JSON: ${show(r)}`);
  }
}

/** `svc watch --json` kept running: its NDJSON lines and stderr as they come. */
export interface Watch {
  child: ChildProcess;
  pid: number;
  lines: Array<Record<string, unknown>>;
  stderr(): string;
  stdout(): string;
  /** SIGTERM (the CLI's stop signal) and wait for the exit code */
  stop(): Promise<number | null>;
}

export function startWatch(home: Home, args: string[] = []): Watch {
  const child = spawnSvc(home, ['watch', '--json', ...args]);
  const lines: Array<Record<string, unknown>> = [];
  let out = '';
  let pending = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d;
    pending += d;
    let nl = pending.indexOf('\n');
    while (nl >= 0) {
      const line = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      nl = pending.indexOf('\n');
    }
  });
  child.stderr?.on('data', (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return {
    child,
    pid: child.pid!,
    lines,
    stderr: () => err,
    stdout: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
