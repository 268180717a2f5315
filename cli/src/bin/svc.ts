#!/usr/bin/env node
/** `svc`: `--version` alone is answered before the command tree (and its parser) loads. */
const argv = process.argv.slice(2);

async function main(): Promise<number> {
  if (argv.length === 1 && argv[0] === '--version') {
    const { VERSION } = await import('../version.js');
    process.stdout.write(`${VERSION}\n`);
    return 0;
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
