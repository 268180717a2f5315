#!/usr/bin/env node
/**
 * `svc`: `--version` alone is answered before the command tree (and its parser) loads;
 * `svc statusline` and `svc wake-hook` run again and again inside a coding assistant, so
 * they skip the command tree too.
 */
import { endQuietlyOnClosedPipe } from '../closed-pipe.js';

endQuietlyOnClosedPipe();
const argv = process.argv.slice(2);

async function main(): Promise<number> {
  if (argv.length === 1 && argv[0] === '--version') {
    const { VERSION } = await import('../version.js');
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  if (argv[0] === 'statusline') {
    const { statusLine } = await import('../statusline.js');
    return statusLine(process.env, process.stdout);
  }
  if (argv[0] === 'wake-hook') {
    const { wakeHook } = await import('../wake.js');
    return wakeHook(process.env, process.stdout);
  }
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
