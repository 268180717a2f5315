/**
 * One relay at a time on a data dir whose nats-server it runs: a second one would take
 * the running relay's nats-server for a leftover, stop it and rewrite its config.
 * `relay.lock` names the holder (pid, start time, boot, host); it appears complete or not
 * at all (a hard link of a file already written), so nobody reads it half-written. A lock
 * whose holder is gone (killed, its pid reused by another program, an earlier boot) is
 * taken over; of several relays taking over the same stale lock, the one that creates its
 * claim file first does, and the others then find its lock.
 */
import { createHash, randomUUID } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { SvcError } from '@svc/shared';
import { bootId, isRunning, processIdentity } from './process-identity.js';

export const DATA_DIR_LOCK_FILE = 'relay.lock';

interface LockRecord {
  pid: number;
  start?: string;
  boot?: string;
  host: string;
}

export interface DataDirLock {
  readonly file: string;
  /** Removes the lock if it is still this one's. Idempotent. */
  release(): void;
}

export interface LockOptions {
  /** How often to look again while another relay takes over a stale lock. */
  attempts?: number;
  retryMs?: number;
}

export async function acquireDataDirLock(dataDir: string, options: LockOptions = {}): Promise<DataDirLock> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, DATA_DIR_LOCK_FILE);
  const self = processIdentity(process.pid);
  const record: LockRecord = { pid: self.pid, start: self.start, boot: bootId(), host: hostname() };
  const text = `${JSON.stringify(record)}\n`;
  const draft = `${file}.${randomUUID()}.tmp`;
  writeFileSync(draft, text, { mode: 0o600, flag: 'wx' });
  try {
    for (let attempt = 0; attempt < (options.attempts ?? 100); attempt++) {
      if (created(() => linkSync(draft, file))) return held(file, text);
      const found = readText(file);
      if (found === undefined) continue; // released meanwhile
      const holder = parseRecord(found);
      if (holder && holderRuns(holder)) throw inUse(dataDir, holder);
      // stale: only the holder of this claim may remove the lock it names
      const claim = `${file}.takeover-${createHash('sha256').update(found).digest('hex').slice(0, 16)}`;
      if (created(() => writeFileSync(claim, text, { mode: 0o600, flag: 'wx' }))) {
        try {
          if (readText(file) === found) rmSync(file, { force: true });
        } finally {
          rmSync(claim, { force: true });
        }
        continue;
      }
      await new Promise((r) => setTimeout(r, options.retryMs ?? 50));
    }
    throw new SvcError(
      'data_dir_in_use',
      `another relay is taking over the lock of ${dataDir}; if none is starting, remove ${file}.takeover-*`,
    );
  } finally {
    rmSync(draft, { force: true });
  }
}

function held(file: string, text: string): DataDirLock {
  return {
    file,
    release() {
      if (readText(file) === text) rmSync(file, { force: true });
    },
  };
}

/** Runs an exclusive create: false when the file exists. */
function created(create: () => void): boolean {
  try {
    create();
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The holder a lock names; undefined for a damaged lock, which is stale. */
function parseRecord(text: string): LockRecord | undefined {
  try {
    const r = JSON.parse(text) as Partial<LockRecord> | null;
    if (!r || !Number.isSafeInteger(r.pid) || typeof r.host !== 'string') return undefined;
    return r as LockRecord;
  } catch {
    return undefined;
  }
}

function holderRuns(holder: LockRecord): boolean {
  const boot = bootId();
  const sameBoot = holder.boot !== undefined && boot !== undefined && holder.boot === boot;
  // Another machine's process (a data dir on a shared disk) cannot be looked at: assume it
  // runs. A container recreated under another host name still shares this kernel's boot: its
  // holder is judged by pid and start time, or a killed relay's lock would block it for good.
  if (holder.host !== hostname() && !sameBoot) return true;
  if (holder.boot !== undefined && boot !== undefined && holder.boot !== boot) return false;
  return isRunning({ pid: holder.pid, start: holder.start });
}

function inUse(dataDir: string, holder: LockRecord): SvcError {
  const where = holder.host === hostname() ? '' : ` on ${holder.host}`;
  return new SvcError(
    'data_dir_in_use',
    `the data dir ${dataDir} is in use by the relay with pid ${holder.pid}${where}; stop it first, or start this one with another --data-dir`,
  );
}
