/**
 * `svc --help | head`: a reader that closes the pipe early ends the command quietly
 * (exit 0, nothing on stderr), not with an EPIPE stack.
 */
import { spawn } from 'node:child_process';
import { SVC_BIN } from '@svc/test-harness/bins';
import { describe, expect, it } from 'vitest';

/** Runs the command with its stdout pipe closed before it writes anything. */
function withClosedStdout(bin: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('a closed stdout pipe', () => {
  it('svc --help ends quietly', async () => {
    expect(await withClosedStdout(SVC_BIN)).toEqual({ code: 0, stderr: '' });
  });
});
