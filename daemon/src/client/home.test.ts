/** The daemon and its clients resolve SVC_HOME (and the socket under it) the same way, blank values included. */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../config/config.js';
import { readEnv } from '../config/env.js';
import { homePaths } from '../paths.js';
import { defaultHome, socketPathFor } from './home.js';
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
