/** The daemon and its clients resolve SVC_HOME (and the socket under it) the same way, blank values included. */
import { mkdtempSync, symlinkSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../config/config.js';
import { readEnv } from '../config/env.js';
import { homePaths } from '../paths.js';
import { defaultHome, homeProblem, socketPathFor } from './home.js';
import { DaemonClient } from './index.js';

describe('SVC_HOME', () => {
  it.each([
    [undefined, join(homedir(), '.svc')],
    ['', join(homedir(), '.svc')],
    ['   ', join(homedir(), '.svc')],
    [' /srv/svc-home ', '/srv/svc-home'],
    ['relative/home', resolve('relative/home')],
  ])('%j is %s for the daemon, its client and the socket path', (value, home) => {
    const env = value === undefined ? {} : { SVC_HOME: value };
    expect(defaultHome(env)).toBe(home);
    expect(buildConfig(readEnv(env)).home).toBe(home);
    expect(homePaths(buildConfig(readEnv(env)).home).socket).toBe(socketPathFor(home));
    expect(new DaemonClient({ home: defaultHome(env) }).socketPath).toBe(join(home, 'run', 'daemon.sock'));
  });
});

describe.skipIf(process.platform !== 'linux')('a home svc cannot keep its files in', () => {
  it.each([
    ['/proc/svc-home', 'proc', '/proc'],
    ['/proc/self', 'proc', '/proc/self'],
    ['/proc/self/svc/deeper', 'proc', '/proc/self'],
    ['/sys/svc-home', 'sysfs', '/sys'],
  ])('%s: on a %s file system (%s), said before anything is created', (home, fs, existing) => {
    expect(homeProblem(home)).toBe(
      `SVC_HOME ${home} lies on a ${fs} file system (${existing}), the kernel's view and not storage, where svc cannot keep its files: set SVC_HOME to a directory on a disk, or unset it for ~/.svc.`,
    );
  });

  it('a link into /proc is followed; a home on a disk, existing or not, is fine', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-home-check-'));
    symlinkSync('/proc', join(dir, 'proc-link'));
    expect(homeProblem(join(dir, 'proc-link', 'svc'))).toMatch(/ lies on a proc file system /);
    expect(homeProblem(dir)).toBeUndefined();
    expect(homeProblem(join(dir, 'not', 'yet', 'made'))).toBeUndefined();
    expect(homeProblem(join(homedir(), '.svc'))).toBeUndefined();
  });
});
