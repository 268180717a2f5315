/**
 * Whether a process is the local nats-server this home started: the pid file names it
 * and the process itself must be a nats-server running this home's config file (its
 * command line, read from /proc). A pid that was reused by another program, a
 * nats-server of someone else, or a pid file without a live process proves nothing, and
 * `svc stop` refuses to signal it.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { orAfter } from '../or-after.js';
import { waitForExit } from '../process-exit.js';

const STOP_GRACE_MS = 5000;

/** The refusal of `svc stop --local`; its code is in the shared catalog. */
export class ProcessNotOwned extends Error {
  readonly code = 'process_not_owned';
  readonly status = 409;
}

export interface PidRecord {
  pid: number;
  config_file: string;
  started_at: string;
  local_only: boolean;
  port: number;
  monitor_port: number;
  listen: string;
}

export function writePidRecord(file: string, record: PidRecord): void {
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
}

export function readPidRecord(file: string): PidRecord | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
  const r = parsed as Partial<PidRecord> | null;
  if (!r || !Number.isSafeInteger(r.pid) || (r.pid as number) <= 0 || typeof r.config_file !== 'string')
    return undefined;
  return r as PidRecord;
}

export function removePidRecord(file: string): void {
  rmSync(file, { force: true });
}

/** The process's argv, or undefined when it does not exist (or /proc cannot tell). */
export function processArgv(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

export type Ownership = { owned: true; record: PidRecord } | { owned: false; reason: string };

/** Proves, or refuses to prove, that the pid file names our nats-server. */
export function proveOwnership(pidFile: string, expectedConfig: string): Ownership {
  const record = readPidRecord(pidFile);
  if (!record) return { owned: false, reason: `no readable pid file at ${pidFile}` };
  if (record.config_file !== expectedConfig)
    return { owned: false, reason: `the pid file names another config (${record.config_file})` };
  const argv = processArgv(record.pid);
  if (!argv) return { owned: false, reason: `no process ${record.pid} (a stale pid file)` };
  const exe = basename(argv[0] ?? '');
  if (exe !== 'nats-server')
    return { owned: false, reason: `process ${record.pid} is ${exe || 'unknown'}, not nats-server` };
  const configIndex = argv.findIndex((a) => a === '-c' || a === '--config');
  if (configIndex < 0 || argv[configIndex + 1] !== expectedConfig)
    return { owned: false, reason: `process ${record.pid} runs another configuration` };
  return { owned: true, record };
}

/** SIGTERM, then SIGKILL after the grace period. */
export async function terminate(pid: number, child?: ChildProcess): Promise<void> {
  const exited = child ? new Promise<void>((r) => child.once('exit', () => r())) : waitForExit(pid, STOP_GRACE_MS, 50);
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  if (
    (await orAfter(
      exited.then(() => 'done' as const),
      STOP_GRACE_MS,
      'late' as const,
    )) === 'late'
  ) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/**
 * `svc stop --local` without a daemon to ask: signals the server only when the pid file
 * and the process itself prove it is this home's; otherwise refuses and says why.
 * Undefined when there is no pid file at all: this home started no server, so there is
 * nothing to stop (and nothing to prove); a pid file that proves nothing is still refused.
 */
export async function stopOwnedServer(files: { pidFile: string; configFile: string }): Promise<number | undefined> {
  if (!existsSync(files.pidFile)) return undefined;
  const proof = proveOwnership(files.pidFile, files.configFile);
  if (!proof.owned) throw new ProcessNotOwned(`Not stopping anything: ${proof.reason}.`);
  await terminate(proof.record.pid);
  removePidRecord(files.pidFile);
  return proof.record.pid;
}
