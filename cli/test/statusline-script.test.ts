/**
 * cli/bin/svc-statusline, the sh status line a coding assistant runs: it prints the daemon's
 * row for SVC_AGENT (else the combined row) when the daemon's pid is alive, and says the
 * daemon is down otherwise; it always exits 0. Run with a temp SVC_HOME and a made-up file
 * (the daemon writing it is covered in daemon/test/statusline-file.test.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pidFileLine, processStart, statusFileText } from '@svc/daemon/client';
import { tempDir, until } from '@svc/test-harness';
import { describe, expect, it } from 'vitest';
import { statusFromFile } from '../src/statusline.js';

const SCRIPT = resolve(import.meta.dirname, '../bin/svc-statusline');
const DOWN = 'svc: daemon down (svc start)\n';

const SUMMARY = {
  agents: [
    { name: 'alice', agent_number: '100001', session: 'connected' as const, unread: 3 },
    { name: 'bob', agent_number: '100002', session: 'offline' as const, unread: 0 },
  ],
};

/** A pid no process has: one of a child that has exited (not reused within the test). */
const deadPid = (): number => {
  const r = spawnSync('/bin/sh', ['-c', 'exit 0']);
  if (r.pid === undefined) throw new Error('no child');
  return r.pid;
};

function home(opts: { pid?: string; file?: string } = {}) {
  const root = tempDir('svc-statusline-');
  mkdirSync(join(root, 'run'));
  if (opts.pid !== undefined) writeFileSync(join(root, 'run', 'daemon.pid'), opts.pid);
  if (opts.file !== undefined) writeFileSync(join(root, 'run', 'statusline'), opts.file, { mode: 0o600 });
  return root;
}

function run(env: Record<string, string>) {
  const r = spawnSync('/bin/sh', [SCRIPT], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('cli/bin/svc-statusline', () => {
  it("a live daemon's file: the combined row, or SVC_AGENT's by name or number", () => {
    // the pid file as a daemon writes it
    const h = home({ pid: pidFileLine(), file: statusFileText(SUMMARY) });
    const all = 'svc alice ● connected · 3 unread | bob ○ offline\n';
    expect(run({ SVC_HOME: h })).toEqual({ code: 0, stdout: all, stderr: '' });
    expect(run({ SVC_HOME: h, SVC_AGENT: 'alice' }).stdout).toBe('svc alice ● connected · 3 unread\n');
    expect(run({ SVC_HOME: h, SVC_AGENT: '100002' }).stdout).toBe('svc bob ○ offline\n');
    expect(run({ SVC_HOME: h, SVC_AGENT: 'carol' })).toEqual({ code: 0, stdout: 'svc: no agent carol\n', stderr: '' });
    // a glob in SVC_AGENT is a literal name, not a pattern
    expect(run({ SVC_HOME: h, SVC_AGENT: 'a*' }).stdout).toBe('svc: no agent a*\n');
    // the same rows through `svc statusline`
    expect(statusFromFile(h)).toBe(all.trimEnd());
    expect(statusFromFile(h, '100001')).toBe('svc alice ● connected · 3 unread');
  });

  it('SVC_HOME unset or empty: ~/.svc', () => {
    const user = tempDir('svc-statusline-user-');
    mkdirSync(join(user, '.svc', 'run'), { recursive: true });
    writeFileSync(join(user, '.svc', 'run', 'daemon.pid'), `${process.pid}\n`);
    writeFileSync(join(user, '.svc', 'run', 'statusline'), statusFileText(SUMMARY));
    expect(run({ HOME: user, SVC_AGENT: 'bob' }).stdout).toBe('svc bob ○ offline\n');
    expect(run({ HOME: user, SVC_HOME: '', SVC_AGENT: 'bob' }).stdout).toBe('svc bob ○ offline\n');
  });

  it('the file missing: daemon down, exit 0', () => {
    const h = home({ pid: `${process.pid}\n` });
    expect(run({ SVC_HOME: h })).toEqual({ code: 0, stdout: DOWN, stderr: '' });
    expect(statusFromFile(h)).toBeUndefined();
  });

  it('a stale pid (the daemon died without cleaning up): daemon down, exit 0', () => {
    const h = home({ pid: `${deadPid()}\n`, file: statusFileText(SUMMARY) });
    expect(run({ SVC_HOME: h })).toEqual({ code: 0, stdout: DOWN, stderr: '' });
    expect(statusFromFile(h)).toBeUndefined();
  });

  it("an earlier daemon's pid file, the pid alone: taken at its word", () => {
    const h = home({ pid: `${process.pid}\n`, file: statusFileText(SUMMARY) });
    expect(run({ SVC_HOME: h, SVC_AGENT: 'bob' }).stdout).toBe('svc bob ○ offline\n');
    expect(statusFromFile(h, 'bob')).toBe('svc bob ○ offline');
  });

  it.runIf(process.platform === 'linux')(
    'a pid reused by another process since (the daemon was killed with -9, then the machine rebooted): daemon down',
    () => {
      // this process is alive, but started at another time than the file says
      const h = home({
        pid: `${process.pid} ${BigInt(processStart(process.pid) as string) + 7n}\n`,
        file: statusFileText(SUMMARY),
      });
      expect(run({ SVC_HOME: h })).toEqual({ code: 0, stdout: DOWN, stderr: '' });
      expect(statusFromFile(h)).toBeUndefined();
    },
  );

  it.runIf(process.platform === 'linux')(
    'a daemon that ended but was not reaped yet (a zombie): daemon down',
    async () => {
      // a short sleep in the background of a shell that has by then become `sleep 30`, which
      // never reaps it (see daemon/src/client/process-exit.test.ts)
      const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
      try {
        const zombie = await new Promise<number>((r) => parent.stdout.once('data', (d) => r(Number(String(d)))));
        const h = home({ pid: `${zombie} ${processStart(zombie)}\n`, file: statusFileText(SUMMARY) });
        await until(() => readFileSync(`/proc/${zombie}/stat`, 'utf8').includes(') Z '), 10_000, 'the sleep to end');
        expect(run({ SVC_HOME: h })).toEqual({ code: 0, stdout: DOWN, stderr: '' });
        expect(statusFromFile(h)).toBeUndefined();
      } finally {
        parent.kill('SIGKILL');
      }
    },
  );

  it('no pid file, a pid file that is not a number, no run directory at all: daemon down, exit 0', () => {
    for (const h of [
      home({ file: statusFileText(SUMMARY) }),
      home({ pid: 'garbage; rm -rf /\n', file: statusFileText(SUMMARY) }),
      home({ pid: '', file: statusFileText(SUMMARY) }),
      tempDir('svc-statusline-empty-'),
    ]) {
      expect(run({ SVC_HOME: h })).toEqual({ code: 0, stdout: DOWN, stderr: '' });
    }
  });
});
