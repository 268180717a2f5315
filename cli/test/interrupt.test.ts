/**
 * Ctrl-C ends the long-running commands promptly: a real `svc watch` and a real
 * `svc msg check --stream` subprocess against a real daemon, each sent SIGINT while it
 * waits. The agent is stored locally with an unreachable relay (its session just keeps
 * connecting), which is all these commands need.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { SVC_BIN } from '@svc/test-harness/bins';
import { startDaemon, type TestDaemon, tempHome } from '@svc/test-harness/daemon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeAgentFile } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let d: TestDaemon;

/** Starts `svc ARGS -v`, resolves once it says it is waiting, with a promise of its exit. */
async function startWaiting(args: string[]): Promise<{ child: ChildProcess; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [SVC_BIN, ...args, '-v'], {
    cwd: root,
    env: { ...process.env, SVC_HOME: d.home, SVC_AGENT: '' },
    // stdin stays open, as a terminal's does
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let err = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (c: Buffer) => {
      err += c;
      if (/interrupt to stop/.test(err)) resolve();
    });
    void exited.then((code) => reject(new Error(`svc ${args.join(' ')} exited ${code} early: ${err}`)));
  });
  // the daemon has the request or stream open once the command has said so and a moment passed
  await new Promise((r) => setTimeout(r, 300));
  return { child, exited };
}

/** SIGINT, then which comes first: the exit or a 1.5 s timer (what it took before the fix). */
async function interrupt(w: { child: ChildProcess; exited: Promise<number | null> }): Promise<number | null | 'late'> {
  w.child.kill('SIGINT');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), 1_500);
  });
  const first = await Promise.race([w.exited, late]);
  clearTimeout(timer);
  if (first === 'late') w.child.kill('SIGKILL');
  return first;
}

beforeAll(async () => {
  const home = tempHome('svc-cli-int-');
  writeAgentFile(home);
  d = await startDaemon(home);
}, 30_000);

afterAll(async () => {
  await d?.daemon.close();
  if (d) await rm(d.home, { recursive: true, force: true });
});

describe('Ctrl-C', () => {
  it('ends svc watch at once, exit 0', async () => {
    expect(await interrupt(await startWaiting(['watch', '--as', 'alice']))).toBe(0);
  }, 30_000);

  it('ends svc msg check --stream during its long-poll, exit 0', async () => {
    expect(await interrupt(await startWaiting(['msg', 'check', '--stream', '--wait', '30', '--as', 'alice']))).toBe(0);
  }, 30_000);
});
