#!/usr/bin/env node
// `svc` as npm links it at install time (committed, so the link exists before any build).
// It runs the one-file CLI bundle that `npm run build` writes, through a V8 code cache kept
// beside it: scripts call svc in loops, and compiling the bundle would cost each run more
// than everything else it does before it talks to the daemon. `svc tui` loads a second
// bundle, the terminal UI, the same way.
'use strict';
const { readFileSync, renameSync, statSync, writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');
const { Script } = require('node:vm');

const dir = join(__dirname, '..', 'dist', 'bundle');
const BUNDLES = { svc: 'the CLI', tui: 'the terminal UI' };

class NotBuiltError extends Error {}

/** Runs `<dir>/<name>.cjs` as a CommonJS module through its code cache; returns its exports. */
function runBundle(name) {
  const file = join(dir, `${name}.cjs`);
  const cacheFile = `${file}.cache`;
  let source;
  try {
    source = readFileSync(file, 'utf8');
  } catch {
    const root = resolve(__dirname, '..', '..');
    throw new NotBuiltError(`svc: ${BUNDLES[name]} is not built yet; build it with: npm run build --prefix ${root}`);
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
  const module_ = { exports: {} };
  script.runInThisContext()(module_.exports, require, module_, file, dir);
  return module_.exports;
}

// import() inside a vm.Script has no loader: the bundle imports the modules it leaves out
// (ES modules) through this one, resolved from this file's place
globalThis.svcImport = (specifier) => import(specifier);
// the terminal UI, for `svc tui` only
globalThis.svcRunBundle = runBundle;
try {
  runBundle('svc');
} catch (err) {
  if (!(err instanceof NotBuiltError)) throw err;
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
}
