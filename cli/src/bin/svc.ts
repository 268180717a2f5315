#!/usr/bin/env node
// `svc statusline` runs again and again inside a coding assistant: it skips the command tree
if (process.argv[2] === 'statusline') {
  const { statusLine } = await import('../statusline.js');
  process.exitCode = await statusLine(process.env, process.stdout);
} else {
  const { run } = await import('../program.js');
  process.exitCode = await run(process.argv.slice(2), {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
  });
}
