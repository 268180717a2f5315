/** `svc` as a real process against a real daemon it autostarts in a temp SVC_HOME. */
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort, running, signalIfAlive, tempDir } from '@svc/test-harness';
import { SVC_BIN } from '@svc/test-harness/bins';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
let home: string;

async function svc(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [SVC_BIN, ...args], {
      cwd: root,
      env: { ...process.env, SVC_HOME: home, SVC_VAULT_PASSPHRASE: 'cli-subprocess-test', SVC_AGENT: '', ...env },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('svc subprocess', () => {
  beforeAll(async () => {
    home = tempDir('svc-cli-proc-');
  });
  afterAll(async () => {
    await svc(['stop']);
    await rm(home, { recursive: true, force: true });
  });

  it('svc --version prints the version without a daemon', async () => {
    const r = await svc(['--version']);
    expect(r).toMatchObject({ code: 0, stdout: expect.stringMatching(/^\d+\.\d+\.\d+\n$/) });
  });

  it('svc --no-autostart without a daemon is daemon_unavailable, exit 1', async () => {
    const r = await svc(['--no-autostart', 'deployment', 'list', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).error).toBe('daemon_unavailable');
  });

  it.skipIf(process.platform !== 'linux')(
    'SVC_HOME under /proc is config_invalid, exit 1, naming it (mkdir there never returned)',
    async () => {
      // exec's timeout above kills a hung svc: the hang fails here instead of holding the run
      const procHome = `/proc/svc-cli-test-${process.pid}`;
      const doctor = await svc(['doctor', '--json'], { SVC_HOME: procHome });
      expect(doctor.code, doctor.stderr).toBe(1);
      expect(JSON.parse(doctor.stdout)).toMatchObject({
        error: 'config_invalid',
        message: expect.stringContaining(`SVC_HOME ${procHome} lies on a proc file system`),
      });
      // init makes the home itself
      const init = await svc(['init', '--skip-start', '--name', 'ann'], { SVC_HOME: procHome });
      expect(init.code, init.stderr).toBe(1);
      expect(init.stderr).toMatch(new RegExp(`^svc: error: SVC_HOME ${procHome} lies on .*\\(config_invalid\\)\\n$`));
      // a command that needs no home still runs
      expect(await svc(['--version'], { SVC_HOME: procHome })).toMatchObject({ code: 0 });
    },
  );

  it('svc deployment list --json autostarts the daemon and prints []', async () => {
    const r = await svc(['deployment', 'list', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([]);
  });

  it('svc start -b with the daemon running says it already runs', async () => {
    const r = await svc(['start', '-b']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^The svc daemon already runs \(pid \d+, /);
  });

  it('a usage error exits 2', async () => {
    expect((await svc(['msg', 'check', '--wait', '31'])).code).toBe(2);
  });

  it('svc desktop says what became of the window, as a process with nothing else to wait for', async () => {
    // the watch of the window must hold the process: unheld, it exited 0 saying nothing
    const browser = (script: string) => {
      const file = join(home, `browser-${script.length}.sh`);
      writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
      return file;
    };
    const failed = await svc(['desktop', '--json', '--no-electron', '--port', '0', '--browser', browser('exit 1')]);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ error: 'desktop_no_browser' });
    const opened = await svc(['desktop', '--json', '--no-electron', '--port', '0', '--browser', browser('sleep 3')]);
    expect(opened.code).toBe(0);
    expect(JSON.parse(opened.stdout)).toMatchObject({ mode: 'chromium', pid: expect.any(Number) });
  });
});

describe('svc start in the foreground', () => {
  /** Runs `svc start ARGS` in a fresh home until it has said something on stdout; then `svc stop` ends it. */
  async function startThenStop(args: string[]): Promise<{ said: string; code: number | null; after: string }> {
    const own = tempDir('svc-cli-fg-');
    const env = { ...process.env, SVC_HOME: own, SVC_VAULT_PASSPHRASE: 'cli-subprocess-test', SVC_AGENT: '' };
    try {
      const child = spawn(process.execPath, [SVC_BIN, 'start', ...args], { cwd: root, env, stdio: 'pipe' });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c;
      });
      // it blocks while the daemon runs: what it said before is what a person sees
      const deadline = Date.now() + 20_000;
      while (out === '' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const said = out;
      await exec(process.execPath, [SVC_BIN, 'stop'], { cwd: root, env, timeout: 30_000 });
      const code = await exited;
      return { said, code, after: out.slice(said.length) };
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  }

  it('says that the daemon runs, its pid and home, and how to stop it, before it blocks', async () => {
    const r = await startThenStop([]);
    expect(r.said).toMatch(
      /^The svc daemon runs in the foreground \(pid \d+, version [^,]+, home .+\); stop it with Ctrl-C or `svc stop`\.\n$/,
    );
    expect(r.code).toBe(0);
    expect(r.after).toBe('');
  });

  it('--json: one JSON object, the status as `start -b --json` prints it', async () => {
    const r = await startThenStop(['--json']);
    expect(JSON.parse(r.said)).toMatchObject({ pid: expect.any(Number), foreground: true, already_running: false });
    expect(r.code).toBe(0);
    expect(r.after).toBe('');
  });
});

describe('svc stop', () => {
  it('returns once the daemon has exited, not as soon as it answered (it then still closes the local server and its archives)', async () => {
    const own = tempDir('svc-cli-stop-');
    const env = { ...process.env, SVC_HOME: own, SVC_VAULT_PASSPHRASE: 'cli-subprocess-test', SVC_AGENT: '' };
    let nats: number | undefined;
    let daemon: number | undefined;
    try {
      const started = await svc(['start', '-b', '--json'], { SVC_HOME: own });
      expect(started.code, started.stderr).toBe(0);
      daemon = JSON.parse(started.stdout).pid as number;
      const ports = ['--port', String(await freePort()), '--monitor-port', String(await freePort())];
      const stack = await svc(['start', '--local-only', ...ports, '--json'], { SVC_HOME: own });
      expect(stack.code, stack.stderr).toBe(0);
      nats = JSON.parse(stack.stdout).pid as number;
      // the daemon's close waits for its nats-server to exit: held, it cannot finish closing
      process.kill(nats, 'SIGSTOP');
      const child = spawn(process.execPath, [SVC_BIN, 'stop', '-v'], { cwd: root, env, stdio: 'pipe' });
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c;
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      const waiting = new Promise<'waiting'>((resolve) => {
        let err = '';
        child.stderr.on('data', (c: Buffer) => {
          err += c;
          if (err.includes(`svc: waiting for the daemon (pid ${daemon}) to exit`)) resolve('waiting');
        });
      });
      // a stop that returns while the daemon is held has returned before the daemon exited
      const first = await Promise.race([exited.then(() => 'exited' as const), waiting]);
      expect(first === 'exited' ? { first, daemonRunning: running(daemon) } : { first }).toEqual({ first: 'waiting' });
      process.kill(nats, 'SIGCONT');
      expect(await exited).toBe(0);
      expect(out).toBe('Stopped the svc daemon.\n');
      expect(running(daemon)).toBe(false);
      expect(running(nats)).toBe(false);
    } finally {
      if (nats !== undefined) signalIfAlive(nats, 'SIGCONT');
      if (daemon !== undefined && running(daemon)) await svc(['stop'], { SVC_HOME: own });
      await rm(own, { recursive: true, force: true });
    }
  });
});
