import { spawn } from 'node:child_process';
import { until } from '@svc/test-harness';
import { afterAll, expect, it } from 'vitest';
import { processExited, waitForExit } from './process-exit.js';

const children: ReturnType<typeof spawn>[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

it('a running process has not exited; once killed (and reaped) it has', async () => {
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  children.push(child);
  const pid = child.pid as number;
  expect(processExited(pid)).toBe(false);
  child.kill('SIGTERM');
  expect(await waitForExit(pid, 10_000, 20)).toBe(true);
});

// zombies are told apart through /proc
it.runIf(process.platform === 'linux')(
  'a zombie has exited, though kill(pid, 0) still finds it (the daemon lock and the status line count it gone)',
  async () => {
    // a short sleep runs in the background of a shell that has by then become `sleep 30`, which
    // never reaps it: it stays a zombie until its parent ends (it ends after the exec, so no
    // shell can have reaped it before)
    const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    children.push(parent);
    const zombie = await new Promise<number>((resolve) =>
      parent.stdout.once('data', (d) => resolve(Number(String(d)))),
    );
    await until(() => processExited(zombie), 10_000, 'the background sleep to end');
    expect(() => process.kill(zombie, 0)).not.toThrow();
  },
);

it('a pid no process has is exited', () => {
  // above any pid_max Linux allows (2^22)
  expect(processExited(2 ** 22 + 1)).toBe(true);
});
