#!/usr/bin/env node
// `svc` as npm links it at install time (committed, so the link exists before any build).
// It runs the one-file CLI bundle that `npm run build` writes, through a V8 code cache kept
// beside it: scripts call svc in loops, and compiling the bundle would cost each run more
// than everything else it does before it talks to the daemon.
'use strict';
const { readFileSync, renameSync, statSync, writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');
const { Script } = require('node:vm');

const dir = join(__dirname, '..', 'dist', 'bundle');
const file = join(dir, 'svc.cjs');
const cacheFile = `${file}.cache`;
let source;
try {
  source = readFileSync(file, 'utf8');
} catch {
  const root = resolve(__dirname, '..', '..');
  process.stderr.write(`svc: the CLI is not built yet; build it with: npm run build --prefix ${root}\n`);
  process.exit(1);
}
let cachedData;
try {
  // V8 checks a cache against the source's length, not its text: one older than the bundle
  // may be for another build of it, so it is not used (and this run writes a new one)
  if (statSync(cacheFile).mtimeMs >= statSync(file).mtimeMs) cachedData = readFileSync(cacheFile);
} catch {
  // no cache yet: this run writes one
}
// as CommonJS wraps a module (a leading #! line becomes a comment, keeping line numbers)
const body = source.startsWith('#!') ? `//${source}` : source;
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${body}\n})`, {
  filename: file,
  cachedData,
});
if (cachedData === undefined || script.cachedDataRejected) {
  // written at exit, so it holds the functions this run compiled; another node version rejects it
  process.once('exit', () => {
    try {
      const tmp = `${cacheFile}.${process.pid}`;
      writeFileSync(tmp, script.createCachedData());
      renameSync(tmp, cacheFile);
    } catch {
      // a checkout we cannot write to: runs stay correct, only slower
    }
  });
}
// import() inside a vm.Script has no loader: the bundle imports the modules it leaves out
// (the terminal UI, an ES module) through this one, resolved from this file's place
globalThis.svcImport = (specifier) => import(specifier);
const module_ = { exports: {} };
script.runInThisContext()(module_.exports, require, module_, file, dir);
