import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { afterAll, afterEach, expect, it, vi } from 'vitest';
import { parsePidFile, processStart } from '../client/pid-file.js';
import { acquireInstanceLock } from './lock.js';

const children: ReturnType<typeof spawn>[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});
afterEach(() => {
  vi.useRealTimers();
});

/** Resolves once `p` has settled or a few turns of the event loop (real ones) went by without it. */
async function settledSoon<T>(p: Promise<T>): Promise<{ settled: boolean }> {
  let settled = false;
  p.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  for (let i = 0; i < 20 && !settled; i++) await new Promise((r) => setImmediate(r));
  return { settled };
}

it.runIf(process.platform === 'linux')(
  "a pid file whose pid now belongs to another process is stale at once: the lock is taken without waiting for that process's socket",
  async () => {
    const dir = tempDir('svc-lock-');
    const lockFile = join(dir, 'daemon.pid');
    const socket = join(dir, 'daemon.sock');
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    children.push(other);
    await new Promise((r) => other.once('spawn', r));
    const pid = other.pid as number;
    // a daemon killed with -9 before a reboot; its pid is the sleep's now, which started later
    writeFileSync(lockFile, `${pid} ${BigInt(processStart(pid) as string) - 1n}\n`);
    // a live daemon that has not answered yet gets 3 s, in steps of 100 ms: with timers that
    // never fire, taking the lock completes only if it does not wait
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    const taking = acquireInstanceLock(lockFile, socket);
    expect(await settledSoon(taking)).toEqual({ settled: true });
    const lock = await taking;
    expect(parsePidFile(readFileSync(lockFile, 'utf8'))).toEqual({
      pid: process.pid,
      start: processStart(process.pid),
    });
    lock.release();
    expect(existsSync(lockFile)).toBe(false);
  },
);

it.runIf(process.platform === 'linux')(
  'the same pid file naming the process as it started is a live daemon: given its 3 s to answer',
  async () => {
    const dir = tempDir('svc-lock-');
    const lockFile = join(dir, 'daemon.pid');
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    children.push(other);
    await new Promise((r) => other.once('spawn', r));
    const pid = other.pid as number;
    writeFileSync(lockFile, `${pid} ${processStart(pid)}\n`);
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    const taking = acquireInstanceLock(lockFile, join(dir, 'daemon.sock'));
    expect(await settledSoon(taking)).toEqual({ settled: false });
    // 3 s later, still no answer: stale after all
    await vi.advanceTimersByTimeAsync(3_100);
    (await taking).release();
  },
);
