/**
 * Which process a pid names, on Linux: the pid with its start time (clock ticks since boot,
 * from /proc/<pid>/stat), so a pid the kernel has since handed to another program is not
 * taken for the process that was recorded.
 */
import { existsSync, readFileSync } from 'node:fs';

export interface ProcessIdentity {
  pid: number;
  /** undefined where /proc cannot tell; the pid alone then identifies the process */
  start: string | undefined;
}

/** The fields of /proc/<pid>/stat after the command name: [0] state, [1] ppid, [19] starttime. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // the command name may hold spaces and parentheses: the fields start after the last ')'
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

export function processIdentity(pid: number): ProcessIdentity {
  return { pid, start: statFields(pid)?.[19] };
}

export function parentPid(pid: number): number | undefined {
  const ppid = Number(statFields(pid)?.[1]);
  return Number.isSafeInteger(ppid) ? ppid : undefined;
}

/** The id of this boot: a start time recorded in another boot names no process of this one. */
export function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Whether the process still runs: a zombie does not, nor a pid reused since (other start time). */
export function isRunning(id: ProcessIdentity): boolean {
  // kill(0 or a negative pid) would signal a whole process group
  if (!Number.isSafeInteger(id.pid) || id.pid <= 0) return false;
  let foreign = false;
  try {
    process.kill(id.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
    foreign = true;
  }
  const fields = statFields(id.pid);
  // another user's process /proc hides, or no /proc at all: that it exists is all we know
  if (!fields) return foreign || !existsSync('/proc/self/stat');
  if (fields[0] === 'Z' || fields[0] === 'X') return false;
  return id.start === undefined || fields[19] === id.start;
}
