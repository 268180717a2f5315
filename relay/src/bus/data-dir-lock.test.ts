import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireDataDirLock, DATA_DIR_LOCK_FILE } from './data-dir-lock.js';
import { bootId, processIdentity } from './process-identity.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lock-'));
  dirs.push(dir);
  return dir;
}

const lockOf = (dir: string) => JSON.parse(readFileSync(join(dir, DATA_DIR_LOCK_FILE), 'utf8'));

function writeLock(dir: string, record: object): void {
  writeFileSync(join(dir, DATA_DIR_LOCK_FILE), `${JSON.stringify({ host: hostname(), boot: bootId(), ...record })}\n`);
}

/** A process that ran and is gone (and reaped): its pid names nothing now. */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await once(child, 'exit');
  return child.pid as number;
}

function sleeper(): ChildProcess {
  const child = spawn('sleep', ['60']);
  children.push(child);
  return child;
}

describe('the data dir lock', () => {
  it('is held by one relay: a second is refused with data_dir_in_use naming the holder, until it is released', async () => {
    const dir = dataDir();
    const lock = await acquireDataDirLock(dir);
    expect(lockOf(dir)).toMatchObject({ pid: process.pid, start: processIdentity(process.pid).start });
    await expect(acquireDataDirLock(dir)).rejects.toMatchObject({
      code: 'data_dir_in_use',
      message: expect.stringContaining(`in use by the relay with pid ${process.pid};`),
    });
    lock.release();
    lock.release(); // idempotent
    expect(existsSync(join(dir, DATA_DIR_LOCK_FILE))).toBe(false);
    (await acquireDataDirLock(dir)).release();
    // the draft it links from is gone either way
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a lock whose holder is gone is taken over: dead pid, pid reused by another program, earlier boot, damaged', async () => {
    const reused = sleeper();
    const stale: Array<object | string> = [
      { pid: await deadPid() },
      // a live process, but not the one that took the lock (another start time)
      { pid: reused.pid, start: '1' },
      { pid: process.pid, start: processIdentity(process.pid).start, boot: 'an-earlier-boot' },
      '{"pid":',
    ];
    for (const record of stale) {
      const dir = dataDir();
      if (typeof record === 'string') writeFileSync(join(dir, DATA_DIR_LOCK_FILE), record);
      else writeLock(dir, record);
      const lock = await acquireDataDirLock(dir);
      expect(lockOf(dir).pid, JSON.stringify(record)).toBe(process.pid);
      lock.release();
    }
  });

  it('a lock whose holder runs, here or on another host, is left alone', async () => {
    const holder = sleeper();
    const dir = dataDir();
    writeLock(dir, { pid: holder.pid, start: processIdentity(holder.pid as number).start });
    await expect(acquireDataDirLock(dir)).rejects.toMatchObject({
      code: 'data_dir_in_use',
      message: expect.stringContaining(`pid ${holder.pid};`),
    });
    // another machine's process (another host, another boot) cannot be looked at
    writeLock(dir, { pid: await deadPid(), host: 'elsewhere.example', boot: 'another-machine-boot-id' });
    await expect(acquireDataDirLock(dir)).rejects.toMatchObject({
      code: 'data_dir_in_use',
      message: expect.stringContaining('on elsewhere.example;'),
    });
  });

  it("a container recreated under another host name takes over its killed relay's lock (same kernel boot)", async () => {
    const dir = dataDir();
    writeLock(dir, { pid: await deadPid(), host: 'old-container-id' });
    const lock = await acquireDataDirLock(dir);
    lock.release();
  });

  it('a release after the lock passed to another holder removes nothing', async () => {
    const dir = dataDir();
    const lock = await acquireDataDirLock(dir);
    const holder = sleeper();
    writeLock(dir, { pid: holder.pid, start: processIdentity(holder.pid as number).start });
    lock.release();
    expect(lockOf(dir).pid).toBe(holder.pid);
  });

  it('of several processes taking over one stale lock at the same moment, exactly one gets it', async () => {
    const dir = dataDir();
    writeLock(dir, { pid: await deadPid() });
    const module = fileURLToPath(new URL('./data-dir-lock.ts', import.meta.url));
    // each waits for the same instant, then tries; a winner holds the lock until it is killed
    const at = Date.now() + 4000;
    const script = `
      const { acquireDataDirLock } = await import(${JSON.stringify(module)});
      while (Date.now() < ${at});
      acquireDataDirLock(${JSON.stringify(dir)}).then(
        () => { console.log('won'); setInterval(() => {}, 1000); },
        (err) => console.log(err.code ?? err.message),
      );`;
    const outcomes = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const child = spawn(
          process.execPath,
          ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', script],
          { stdio: ['ignore', 'pipe', 'inherit'] },
        );
        children.push(child);
        const [line] = (await once(child.stdout, 'data')) as [Buffer];
        return { pid: child.pid, outcome: line.toString().trim() };
      }),
    );
    expect(outcomes.map((o) => o.outcome).sort()).toEqual([
      'data_dir_in_use',
      'data_dir_in_use',
      'data_dir_in_use',
      'won',
    ]);
    expect(lockOf(dir).pid).toBe(outcomes.find((o) => o.outcome === 'won')?.pid);
    expect(readdirSync(dir)).toEqual([DATA_DIR_LOCK_FILE]);
  }, 30_000);
});
