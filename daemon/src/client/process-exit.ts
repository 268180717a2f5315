/**
 * Whether a process has exited, and waiting until it has: `svc stop` waits for the daemon,
 * and stopping the local nats-server waits for it before a SIGKILL.
 */
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Whether process `pid` has exited: no such process, or a zombie (its adopter may never reap it). */
export function processExited(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists, under another user
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return ['Z', 'X'].includes(stat.slice(stat.lastIndexOf(')') + 2)[0] ?? '');
  } catch {
    // gone since kill() found it; without /proc, that it exists is all there is to know
    return existsSync('/proc/self/stat');
  }
}

/** Waits up to `ms` for process `pid` to exit, looking every `pollMs`; whether it did. */
export async function waitForExit(pid: number, ms: number, pollMs: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (processExited(pid)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(pollMs);
  }
}
