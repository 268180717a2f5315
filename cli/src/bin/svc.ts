#!/usr/bin/env node
// `svc statusline` and `svc wake-hook` run again and again inside a coding assistant: they skip the command tree
if (process.argv[2] === 'statusline') {
  const { statusLine } = await import('../statusline.js');
  process.exitCode = await statusLine(process.env, process.stdout);
} else if (process.argv[2] === 'wake-hook') {
  const { wakeHook } = await import('../wake.js');
  process.exitCode = await wakeHook(process.env, process.stdout);
} else {
  const { run } = await import('../program.js');
  process.exitCode = await run(process.argv.slice(2), {
    env: process.env,
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
  });
}
