/**
 * The small pieces every package's tests share: temp dirs, free ports, polling with a
 * deadline, child processes and their logs. The heavier parts (relay, daemon, OIDC
 * provider, browser) are separate entry points, so a test loads only what it uses.
 */
import { type SpawnOptions, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFreePort } from '@svc/shared/node';

/** Ports this process handed out: the OS may offer a port again as soon as its listener closed. */
const handedOut = new Set<number>();

/**
 * A free loopback TCP port: one the OS hands out for a listener that closes at once, and
 * never one this process handed out before (a test that takes eleven ports at once got the
 * same one twice, and its second server could not listen). The port finder is shared's,
 * not @svc/relay's: importing the relay cost each test file that runs it as a process
 * ~0.9 s of loading Fastify, NATS and the rest.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const port = await findFreePort(host, handedOut);
  handedOut.add(port);
  return port;
}

/** A fresh directory under the OS temp dir. */
export const tempDir = (prefix = 'svc-test-'): string => mkdtempSync(join(tmpdir(), prefix));

/**
 * Polls fn until it returns something other than undefined/false, or throws after
 * timeoutMs. Tests wait on the condition itself, never on a fixed sleep.
 */
export async function until<T>(
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
  what = 'condition',
  intervalMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface ChildResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion, collecting its output; killed with SIGKILL after timeoutMs. */
export function runChild(
  command: string,
  args: string[],
  options: Pick<SpawnOptions, 'cwd' | 'env'> & { timeoutMs?: number } = {},
): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => {
      stdout += d;
    });
    child.stderr?.on('data', (d) => {
      stderr += d;
    });
    const timer =
      options.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Sends `signal` to `pid` unless it is gone; whether it was sent. A process can exit between
 * any check of it and the kill (a teardown failed on that once: `kill ESRCH`), so a gone
 * process is an answer here, not an error.
 */
export function signalIfAlive(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** Alive and not a zombie (a reparented child nobody reaps counts as gone). */
export function running(pid: number): boolean {
  if (!processAlive(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true; // no procfs: trust kill(pid, 0)
  }
}

/** The last lines of a log file, for a failure report. */
export function tail(file: string, lines = 60): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch (err) {
    return `(cannot read ${file}: ${(err as Error).message})`;
  }
}
