/**
 * The local stack's nats-server (real Debian nats-server on loopback): `--local-only`
 * starts a standalone server with monitoring, and stopping refuses any process the pid
 * file and the process itself do not prove to be ours.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { freePort, processAlive } from '@svc/test-harness';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { processArgv, proveOwnership, stopOwnedServer, writePidRecord } from '../client/local-stack/ownership.js';
import { localStackFiles, resolvePorts } from '../client/local-stack/server-config.js';
import { LocalStack } from './supervisor.js';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups) await c();
});

function strangerProcess(argv: string[]): number {
  const child = spawn(argv[0] as string, argv.slice(1), { stdio: 'ignore' });
  cleanups.push(() => child.kill('SIGKILL'));
  return child.pid as number;
}

describe('svc start --local-only: the local nats-server', () => {
  it('ports come from the flags, else SVC_LEAF_PORT / SVC_MONITOR_PORT, else 4222 / 8222', () => {
    expect(resolvePorts({}, {})).toEqual({ port: 4222, monitorPort: 8222 });
    expect(resolvePorts({}, { SVC_LEAF_PORT: '5222', SVC_MONITOR_PORT: '9222' })).toEqual({
      port: 5222,
      monitorPort: 9222,
    });
    expect(resolvePorts({ port: 1, monitorPort: 2 }, { SVC_LEAF_PORT: '5222' })).toEqual({ port: 1, monitorPort: 2 });
    expect(() => resolvePorts({}, { SVC_LEAF_PORT: 'x' })).toThrow(/SVC_LEAF_PORT/);
  });

  it('runs standalone with monitoring; local clients message each other; stop ends it', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-local-stack-'));
    const files = localStackFiles(join(home, 'run'));
    const stack = new LocalStack(files, pino({ level: 'silent' }));
    cleanups.push(() => stack.stop());
    const port = await freePort();
    const monitorPort = await freePort();
    const status = await stack.start({ listen: '127.0.0.1', port, monitorPort });
    expect(status).toMatchObject({ running: true, local_only: true, url: `nats://127.0.0.1:${port}` });
    expect(proveOwnership(files.pidFile, files.configFile)).toMatchObject({ owned: true });

    // only a client with the daemon's token gets in
    await expect(connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false })).rejects.toThrow();
    await expect(connect({ servers: `nats://127.0.0.1:${port}`, token: 'guess', reconnect: false })).rejects.toThrow();
    const token = stack.clientToken;
    const a = await connect({ servers: `nats://127.0.0.1:${port}`, token });
    const b = await connect({ servers: `nats://127.0.0.1:${port}`, token });
    const sub = b.subscribe('local.test', { max: 1 });
    await b.flush();
    a.publish('local.test', 'hello');
    for await (const m of sub) expect(m.string()).toBe('hello');
    await a.close();
    await b.close();
    const varz = (await (await fetch(`http://127.0.0.1:${monitorPort}/varz`)).json()) as { port: number };
    expect(varz.port).toBe(port);

    const pid = status.pid as number;
    expect(await stack.stop()).toBe(true);
    expect(processAlive(pid)).toBe(false);
  }, 30_000);

  it('a port another process listens on first is refused: the daemon never takes that server for its own', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-local-stack-'));
    const files = localStackFiles(join(home, 'run'));
    // another user's nats-server on the port first (no auth: it would take any token)
    const port = await freePort();
    const otherConf = join(home, 'squatter.conf');
    writeFileSync(otherConf, `host: "127.0.0.1"\nport: ${port}\n`);
    strangerProcess(['/usr/sbin/nats-server', '-c', otherConf]);
    for (let i = 0; i < 200; i++) {
      const nc = await connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false }).catch(() => undefined);
      if (nc) {
        await nc.close();
        break;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    const stack = new LocalStack(files, pino({ level: 'silent' }));
    cleanups.push(() => stack.stop());
    await expect(stack.start({ listen: '127.0.0.1', port, monitorPort: await freePort() })).rejects.toMatchObject({
      code: 'local_stack_failed',
    });
    expect(stack.status().running).toBe(false);
  }, 30_000);

  it('the config file (it holds the token) is 0600 even when an older one was wider', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-local-stack-'));
    const files = localStackFiles(join(home, 'run'));
    mkdirSync(files.dir, { recursive: true });
    writeFileSync(files.configFile, '# an older file\n', { mode: 0o644 });
    const stack = new LocalStack(files, pino({ level: 'silent' }));
    cleanups.push(() => stack.stop());
    await stack.start({ listen: '127.0.0.1', port: await freePort(), monitorPort: await freePort() });
    expect(statSync(files.configFile).mode & 0o777).toBe(0o600);
    await stack.stop();
  }, 30_000);

  it('stop refuses a process it cannot prove it owns, and stops the one it does', async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-local-stack-'));
    const files = localStackFiles(join(home, 'run'));
    const record = (pid: number) => ({
      pid,
      config_file: files.configFile,
      started_at: new Date().toISOString(),
      local_only: true,
      port: 1,
      monitor_port: 2,
      listen: '127.0.0.1',
    });
    const stack = new LocalStack(files, pino({ level: 'silent' }));
    cleanups.push(() => stack.stop());
    const status = await stack.start({ listen: '127.0.0.1', port: await freePort(), monitorPort: await freePort() });
    const ours = status.pid as number;

    // the pid file names another program (a pid reused after a crash)
    const sleeper = strangerProcess(['sleep', '60']);
    writePidRecord(files.pidFile, record(sleeper));
    await expect(stopOwnedServer(files)).rejects.toMatchObject({ code: 'process_not_owned' });
    expect(processAlive(sleeper)).toBe(true);

    // a nats-server, but someone else's (another configuration)
    const otherConf = join(home, 'other.conf');
    writeFileSync(otherConf, `host: "127.0.0.1"\nport: ${await freePort()}\n`);
    const stranger = strangerProcess(['/usr/sbin/nats-server', '-c', otherConf]);
    for (let i = 0; i < 100 && !processArgv(stranger)?.includes(otherConf); i++)
      await new Promise((r) => setTimeout(r, 20));
    writePidRecord(files.pidFile, record(stranger));
    await expect(stopOwnedServer(files)).rejects.toMatchObject({ code: 'process_not_owned' });
    expect(processAlive(stranger)).toBe(true);

    // a stale pid file (no such process)
    writePidRecord(files.pidFile, record(2 ** 22 + 12345));
    await expect(stopOwnedServer(files)).rejects.toMatchObject({ code: 'process_not_owned' });

    // ours, proven by the pid file and the process itself
    writePidRecord(files.pidFile, record(ours));
    expect(await stopOwnedServer(files)).toBe(ours);
    for (let i = 0; i < 100 && processAlive(ours); i++) await new Promise((r) => setTimeout(r, 20));
    expect(processAlive(ours)).toBe(false);
  }, 30_000);
});
