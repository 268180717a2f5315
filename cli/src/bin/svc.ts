#!/usr/bin/env node
/**
 * `svc`: `--version` alone, `svc statusline` and `svc wake-hook` (and their help) are
 * answered before the command tree (and its parser) loads (../fast-path.ts); the two run
 * again and again inside a coding assistant.
 */
import { endQuietlyOnClosedPipe } from '../closed-pipe.js';
import { fastPath } from '../fast-path.js';

endQuietlyOnClosedPipe();
const argv = process.argv.slice(2);

async function main(): Promise<number> {
  const fast = await fastPath(argv, process.env, process.stdout);
  if (fast !== undefined) return fast;
  const { run } = await import('../program.js');
  return run(argv, {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    // process.stdin sets up a stream on first use: only commands that read it pay for it
    get stdin() {
      return process.stdin;
    },
  });
}

main().then((code) => {
  process.exitCode = code;
});
