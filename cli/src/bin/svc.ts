#!/usr/bin/env node
const argv = process.argv.slice(2);
if (argv.length === 1 && argv[0] === '--version') {
  // answered before the command tree (and its parser) is loaded: scripts ask this often
  const { VERSION } = await import('../version.js');
  process.stdout.write(`${VERSION}\n`);
} else {
  const { run } = await import('../program.js');
  process.exitCode = await run(argv, {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    // process.stdin sets up a stream on first use: only commands that read it pay for it
    get stdin() {
      return process.stdin;
    },
  });
}
