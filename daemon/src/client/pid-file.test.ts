import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { livePid, parsePidFile, pidFileLine, processStart } from './pid-file.js';

const children: ReturnType<typeof spawn>[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

describe('the daemon pid file', () => {
  it('reads `PID START` and a pid alone; anything else is no pid file', () => {
    expect(parsePidFile('1234 98765\n')).toEqual({ pid: 1234, start: '98765' });
    expect(parsePidFile('1234\n')).toEqual({ pid: 1234 });
    expect(parsePidFile('1234')).toEqual({ pid: 1234 });
    for (const bad of [
      '',
      '\n',
      '0\n',
      '-5\n',
      '12 ab\n',
      '12 34 56\n',
      'garbage; rm -rf /\n',
      '99999999999999999\n',
    ]) {
      expect(parsePidFile(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });

  it("this process's line names it, as live", () => {
    const line = pidFileLine();
    expect(parsePidFile(line)?.pid).toBe(process.pid);
    expect(livePid(line)).toBe(process.pid);
  });

  it.runIf(process.platform === 'linux')(
    'a pid whose process started at another time is a reused pid, not the daemon (kill -9, then a reboot)',
    async () => {
      const start = processStart(process.pid);
      expect(start).toMatch(/^\d+$/);
      expect(pidFileLine()).toBe(`${process.pid} ${start}\n`);
      expect(livePid(`${process.pid} ${BigInt(start as string) + 1n}\n`)).toBeUndefined();
      // another live process: its own start, not ours
      const child = spawn('sleep', ['30'], { stdio: 'ignore' });
      children.push(child);
      const pid = child.pid as number;
      await new Promise((r) => child.once('spawn', r));
      expect(livePid(`${pid} ${processStart(pid)}\n`)).toBe(pid);
      // (it started well after this test's process: a clock tick is 10 ms)
      expect(processStart(pid)).not.toBe(start);
      expect(livePid(`${pid} ${start}\n`)).toBeUndefined();
      // an earlier daemon's file, the pid alone, is taken at its word
      expect(livePid(`${pid}\n`)).toBe(pid);
    },
  );

  it('a pid no process has is not live, with or without a start', () => {
    // above any pid_max Linux allows (2^22)
    expect(livePid(`${2 ** 22 + 1}\n`)).toBeUndefined();
    expect(livePid(`${2 ** 22 + 1} 12345\n`)).toBeUndefined();
  });
});
