import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findFreePort } from '@svc/shared/node';
import { until } from '@svc/test-harness';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveNatsServerBin, stopLeftoverServer } from './managed-server.js';
import { isRunning } from './process-identity.js';

const logger = pino({ level: 'silent' });
const dirs: string[] = [];
const servers: ChildProcess[] = [];
afterAll(() => {
  for (const s of servers) if (s.exitCode === null) s.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A nats-server as a relay leaves it: started from a config file, its pid in a pid file. */
async function natsServer(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-leftover-'));
  dirs.push(dir);
  const configFile = join(dir, 'nats-server.conf');
  const pidFile = join(dir, 'nats-server.pid');
  const port = await findFreePort('127.0.0.1');
  writeFileSync(configFile, `host: "127.0.0.1"\nport: ${port}\n`);
  const child = spawn(await resolveNatsServerBin('nats-server'), ['-c', configFile], { env, stdio: 'ignore' });
  servers.push(child);
  writeFileSync(pidFile, `${child.pid}\n`);
  // up, as a relay's leftover server is: it has its signal handlers by then (a SIGTERM before
  // them kills it by the signal; after them, it shuts down and exits with status 1)
  await until(
    () =>
      new Promise<boolean>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => resolve(true)).on('error', () => resolve(false));
        socket.once('connect', () => socket.destroy());
      }),
    10_000,
    `nats-server on ${port}`,
  );
  return { child, pid: child.pid as number, configFile, pidFile };
}

async function deadPid(): Promise<number> {
  const child = spawn('true');
  await once(child, 'exit');
  return child.pid as number;
}

const { SVC_BUS_OWNER: _, ...env } = process.env as Record<string, string>;

describe('a nats-server found at start', () => {
  it('whose relay runs is left alone: data_dir_in_use names that relay', async () => {
    // started by this process without naming itself, as an older relay did: its parent is the owner
    const s = await natsServer(env);
    await expect(stopLeftoverServer(s.pidFile, s.configFile, logger)).rejects.toMatchObject({
      code: 'data_dir_in_use',
      message: expect.stringContaining(`relay with pid ${process.pid};`),
    });
    expect(isRunning({ pid: s.pid, start: undefined })).toBe(true);
    expect(existsSync(s.pidFile)).toBe(true);
  });

  it('whose relay is gone is stopped, even where another process adopted it', async () => {
    const s = await natsServer({ ...env, SVC_BUS_OWNER: `${await deadPid()}:1` });
    const exited = once(s.child, 'exit');
    await stopLeftoverServer(s.pidFile, s.configFile, logger);
    // stopped by its SIGTERM: nats-server shuts down and exits with status 1
    expect(await exited).toEqual([1, null]);
    expect(existsSync(s.pidFile)).toBe(false);
  });
});
