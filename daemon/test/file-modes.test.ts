/**
 * Every file the daemon keeps a secret or private data in is 0600, whatever the mode of
 * the directories it finds (a pre-existing 0755 home, logs dir, agent dir) and of files
 * left there before (a 0644 vault, log or archive with its WAL).
 */
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, type TestDaemon, tempHome } from '@svc/test-harness/daemon';
import { afterAll, describe, expect, it } from 'vitest';
import { Archive } from '../src/archive/archive.js';
import { FileVault } from '../src/vault/index.js';

const mode = (path: string) => statSync(path).mode & 0o777;
const running: TestDaemon[] = [];
afterAll(async () => {
  await Promise.all(running.map((d) => d.daemon.close()));
});

/** A home made by someone else, readable by all: 0755 directories, 0644 files. */
function openHome(): string {
  const home = tempHome();
  chmodSync(home, 0o755);
  mkdirSync(join(home, 'logs'), { mode: 0o755 });
  chmodSync(join(home, 'logs'), 0o755);
  return home;
}

describe('file modes', () => {
  it('the vault, log, pid file and socket are 0600 in a 0755 home, also when the files were there before', async () => {
    for (const before of [false, true]) {
      const home = openHome();
      if (before) {
        FileVault.open(join(home, 'vault.json'), undefined).set('agent/x/api_key', 'svc_ak_old');
        chmodSync(join(home, 'vault.json'), 0o644);
        writeFileSync(join(home, 'logs', 'daemon.log'), '');
        chmodSync(join(home, 'logs', 'daemon.log'), 0o644);
      }
      const d = await startDaemon(home);
      running.push(d);
      for (const f of ['vault.json', 'logs/daemon.log', 'run/daemon.pid', 'run/daemon.sock']) {
        expect(mode(join(home, f)), `${f} (existing before: ${before})`).toBe(0o600);
      }
    }
  });

  it('the vault stays 0600 through every write, in a 0755 directory', () => {
    const dir = openHome();
    const v = FileVault.open(join(dir, 'vault.json'), 'pass', { N: 1024, r: 8, p: 1 });
    v.set('k', 'v');
    expect(mode(join(dir, 'vault.json'))).toBe(0o600);
  });

  it('an archive and its WAL files are 0600, new or left at 0644 before', () => {
    const dir = join(openHome(), 'agents', 'alice');
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    const path = join(dir, 'archive.db');
    const fresh = Archive.open(path);
    fresh.db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    for (const f of [path, `${path}-wal`, `${path}-shm`]) expect(mode(f), f).toBe(0o600);
    // a process killed before it checkpointed leaves the WAL behind; loosened by someone
    for (const f of [path, `${path}-wal`, `${path}-shm`]) chmodSync(f, 0o644);
    const again = Archive.open(path);
    for (const f of [path, `${path}-wal`, `${path}-shm`]) expect(mode(f), f).toBe(0o600);
    again.close();
    fresh.close();
  });
});
