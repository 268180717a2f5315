/** The harness's signalIfAlive: a teardown's kill of a process that has just exited is not an error. */
import { spawn } from 'node:child_process';
import { signalIfAlive } from '@svc/test-harness';
import { expect, it } from 'vitest';

it('signals a running process, and answers false for one that has exited instead of throwing ESRCH', async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  const pid = child.pid as number;
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  );
  expect(signalIfAlive(pid, 'SIGKILL')).toBe(true);
  expect(await exited).toBe('SIGKILL');
  // exited and reaped: process.kill itself throws ESRCH here (what a teardown once failed on)
  expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  expect(signalIfAlive(pid, 'SIGKILL')).toBe(false);
});
