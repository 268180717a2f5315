/** The daemon process shell: socket, single instance, status, shutdown, stale files, client errors. */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild, until } from '@svc/test-harness';
import { startDaemon, type TestDaemon, tempHome } from '@svc/test-harness/daemon';
import { afterAll, describe, expect, it } from 'vitest';
import { DaemonClient, DaemonClientError, daemonCommand, ensureDaemon } from '../src/client/index.js';

const running: TestDaemon[] = [];
afterAll(async () => {
  await Promise.all(running.map((d) => d.daemon.close()));
});

describe('daemon shell', () => {
  it('serves status on a 0600 socket in a 0700 run dir and logs JSON', async () => {
    const d = await startDaemon();
    running.push(d);
    const sock = join(d.home, 'run', 'daemon.sock');
    expect(statSync(sock).mode & 0o777).toBe(0o600);
    expect(statSync(join(d.home, 'run')).mode & 0o777).toBe(0o700);
    const status = await d.client.status();
    expect(status).toMatchObject({ pid: process.pid, home: d.home, vault: { kind: 'file-encrypted' }, agents: [] });
    const log = readFileSync(join(d.home, 'logs', 'daemon.log'), 'utf8')
      .trim()
      .split('\n');
    expect(JSON.parse(log[0] as string)).toHaveProperty('level');
    expect(log.join('\n')).not.toContain('test passphrase');
  });

  it('a request its schemas refuse is answered validation_failed, naming the field and where it is', async () => {
    const d = running[0] as TestDaemon;
    await d.client.registerLocal({ name: 'val' });
    await expect(d.client.conversations('val', { limit: 5000 })).rejects.toMatchObject({
      code: 'validation_failed',
      message: 'limit in the query must be <= 1000',
    });
  });

  it('a second daemon on the same home refuses with daemon_already_running', async () => {
    const d = running[0] as TestDaemon;
    await expect(startDaemon(d.home)).rejects.toMatchObject({ code: 'daemon_already_running' });
    // the first one is untouched
    expect((await d.client.status()).pid).toBe(process.pid);
  });

  it('a stale pid file and socket (crashed daemon) are cleaned up', async () => {
    const home = tempHome();
    mkdirSync(join(home, 'run'), { recursive: true, mode: 0o700 });
    writeFileSync(join(home, 'run', 'daemon.pid'), '999999\n');
    // a socket file nobody listens on
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(join(home, 'run', 'daemon.sock'), r));
    await new Promise<void>((r) => srv.close(() => r()));
    writeFileSync(join(home, 'run', 'daemon.sock'), '');
    const d = await startDaemon(home);
    running.push(d);
    expect((await d.client.status()).pid).toBe(process.pid);
  });

  it('the plain-file vault is reported with a warning', async () => {
    const d = await startDaemon(tempHome(), { vaultPassphrase: undefined });
    running.push(d);
    const status = await d.client.status();
    expect(status.vault.kind).toBe('file-plain');
    expect(status.vault.warning).toMatch(/unencrypted/);
  });

  it('a wrong passphrase leaves the vault locked (reported), the daemon still answers', async () => {
    const home = tempHome();
    const first = await startDaemon(home);
    await first.client.registerLocal({ name: 'ann' });
    expect((await first.client.status()).vault).not.toHaveProperty('locked');
    await first.daemon.close();
    const d = await startDaemon(home, { vaultPassphrase: 'wrong' });
    running.push(d);
    const status = await d.client.status();
    expect(status.vault).toMatchObject({
      kind: 'file-encrypted',
      warning: expect.stringMatching(/locked/),
      locked: true,
    });
    // the agent's status says why it does nothing (svc agent list, the dashboard)
    expect(status.agents).toEqual([
      expect.objectContaining({
        name: 'ann',
        session: 'offline',
        session_error: expect.stringMatching(/vault is locked/),
      }),
    ]);
  });

  it('POST /v1/shutdown stops the daemon and removes socket and pid file', async () => {
    const d = await startDaemon();
    await d.client.shutdown();
    await d.daemon.closed;
    expect(existsSync(join(d.home, 'run', 'daemon.sock'))).toBe(false);
    expect(existsSync(join(d.home, 'run', 'daemon.pid'))).toBe(false);
    await expect(d.client.status()).rejects.toMatchObject({ code: 'daemon_unavailable', status: 503 });
  });

  it('errors carry the code and status; unknown agents and routes', async () => {
    const c = (running[0] as TestDaemon).client;
    const err = await c.getAgent('nobody').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DaemonClientError);
    expect(err).toMatchObject({ code: 'unknown_agent', status: 404 });
    await expect(c.request('GET', '/v1/nope')).rejects.toMatchObject({ code: 'not_found', status: 404 });
    await expect(c.getDeployment('none')).rejects.toMatchObject({ code: 'unknown_deployment' });
    await expect(c.fetchDeployment({ url: 'http://127.0.0.1:1', trust_bundle: '{}' })).rejects.toMatchObject({
      status: 503,
    });
  });

  it('ensureDaemon starts a detached daemon from the sources, SIGTERM stops it', async () => {
    expect(daemonCommand().args).toContain('--conditions=source');
    const home = tempHome();
    await expect(ensureDaemon({ home, autostart: false })).rejects.toMatchObject({ code: 'daemon_unavailable' });
    const client = await ensureDaemon({ home, env: { ...process.env, SVC_VAULT_BACKEND: 'file' } });
    const { pid } = await client.status();
    expect(pid).not.toBe(process.pid);
    // a second ensureDaemon finds the running one
    expect((await (await ensureDaemon({ home })).status()).pid).toBe(pid);
    // a second daemon for the same home refuses to run (the built one: the same code, without
    // the source loader's second or so of start-up)
    const second = spawn(process.execPath, [fileURLToPath(new URL('../dist/bin/svc-daemon.js', import.meta.url))], {
      env: { ...process.env, SVC_HOME: home },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    second.stderr.on('data', (d) => {
      stderr += d;
    });
    const code = await new Promise<number | null>((r) => second.once('exit', r));
    expect(code).toBe(3);
    expect(stderr).toContain('daemon_already_running');
    process.kill(pid, 'SIGTERM');
    await until(async () => !existsSync(join(home, 'run', 'daemon.sock')), 10_000, 'daemon exit');
    await expect(new DaemonClient({ home }).status()).rejects.toMatchObject({ code: 'daemon_unavailable' });
  });
});

describe('a daemon setting it cannot take', () => {
  it('the daemon says so in one line with config_invalid, and ensureDaemon passes that on (it was a stack trace)', async () => {
    const home = tempHome();
    const env = { ...process.env, SVC_HOME: home, SVC_VAULT_BACKEND: 'bogus' };
    const bin = fileURLToPath(new URL('../dist/bin/svc-daemon.js', import.meta.url));
    const daemon = await runChild(process.execPath, [bin], { env, timeoutMs: 20_000 });
    expect(daemon.code).toBe(1);
    expect(daemon.stderr).toBe(
      '{"error":"config_invalid","message":"SVC_VAULT_BACKEND must be auto, keyring or file (got bogus)"}\n',
    );
    // an earlier start's lines in the start log are not this start's cause
    mkdirSync(join(home, 'logs'), { recursive: true });
    writeFileSync(join(home, 'logs', 'daemon-start.log'), '{"error":"vault_locked","message":"an old start"}\n');
    await expect(ensureDaemon({ home, env })).rejects.toMatchObject({
      code: 'config_invalid',
      message: `The daemon did not start: SVC_VAULT_BACKEND must be auto, keyring or file (got bogus) (see ${join(home, 'logs', 'daemon-start.log')})`,
    });
  });
});

describe('a home on a virtual file system', () => {
  // under /proc, Node's recursive mkdirSync never returned: each child runs under a watchdog
  // that kills it, so a hang fails the test instead of holding the worker
  const home = `/proc/svc-test-home-${process.pid}`;
  const env = { ...process.env, SVC_HOME: home, SVC_VAULT_BACKEND: 'file' };
  const lastLine = (text: string) => JSON.parse(text.trim().split('\n').at(-1) ?? '') as unknown;

  it.skipIf(process.platform !== 'linux')(
    'the daemon and ensureDaemon refuse it with config_invalid, naming it, before creating anything',
    async () => {
      const bin = fileURLToPath(new URL('../dist/bin/svc-daemon.js', import.meta.url));
      const daemon = await runChild(process.execPath, [bin], { env, timeoutMs: 20_000 });
      expect(daemon.code, daemon.stderr).toBe(1);
      expect(lastLine(daemon.stderr)).toMatchObject({
        error: 'config_invalid',
        message: expect.stringMatching(new RegExp(`^SVC_HOME ${home} lies on a proc file system.*set SVC_HOME`)),
      });

      // the client that starts a daemon (svc tui, the desktop app) checks before it makes the logs dir
      const script = `const { ensureDaemon } = await import('./src/client/index.ts');
        ensureDaemon({ home: ${JSON.stringify(home)} }).then(
          () => console.log('{"error":"none"}'),
          (e) => console.log(JSON.stringify({ error: e.code, message: e.message })),
        );`;
      const client = await runChild(
        process.execPath,
        ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', script],
        { cwd: fileURLToPath(new URL('..', import.meta.url)), env, timeoutMs: 20_000 },
      );
      expect(client.code, client.stderr).toBe(0);
      expect(lastLine(client.stdout)).toMatchObject({
        error: 'config_invalid',
        message: expect.stringContaining(home),
      });
    },
  );
});
