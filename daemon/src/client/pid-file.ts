/**
 * The daemon's pid file, `run/daemon.pid`: one line, `PID START`, START being when the
 * process started (clock ticks since boot, field 22 of /proc/PID/stat; left out where there
 * is no /proc). A daemon killed with -9 leaves its pid file behind, and after a reboot its pid
 * may belong to another process: the start time tells them apart. A line of a pid alone (a
 * daemon of an earlier version) is taken at its word.
 */
import { readFileSync } from 'node:fs';
import { processExited } from './process-exit.js';

/** When process `pid` started (clock ticks since boot), or undefined where /proc cannot tell. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) may hold spaces and parentheses: count from after its last ')'
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return start && /^\d+$/.test(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

/** The pid file's line for this process. */
export function pidFileLine(): string {
  const start = processStart(process.pid);
  return `${process.pid}${start === undefined ? '' : ` ${start}`}\n`;
}

/** What a pid file's text says: its pid and, when recorded, the process's start; undefined for anything else. */
export function parsePidFile(text: string): { pid: number; start?: string } | undefined {
  const m = /^(\d{1,10})(?: (\d{1,20}))?\n?$/.exec(text);
  const pid = Number(m?.[1]);
  if (!m || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return m[2] === undefined ? { pid } : { pid, start: m[2] };
}

/**
 * The pid a pid file's text names, when that process still runs: it has not exited and,
 * where the file recorded when it started, it started then (else the pid was reused).
 */
export function livePid(text: string): number | undefined {
  const named = parsePidFile(text);
  if (!named || processExited(named.pid)) return undefined;
  if (named.start !== undefined) {
    const start = processStart(named.pid);
    // without /proc (or once it has gone) nothing contradicts the file
    if (start !== undefined && start !== named.start) return undefined;
  }
  return named.pid;
}
