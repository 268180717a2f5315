// Runs a one-file CommonJS bundle that `npm run build` writes (the svc CLI, its terminal UI,
// the svc-relay command) through a V8 code cache kept beside it (`<bundle>.cache`): the
// commands start many times (scripts call svc in loops, operators and tests call
// svc-relay), and compiling a bundle costs a run more than what most runs do after it.
// Used by the committed bins cli/bin/svc.cjs and relay/bin/svc-relay.js.
'use strict';
const { createHash } = require('node:crypto');
const { readFileSync, renameSync, statSync, writeFileSync } = require('node:fs');
const { dirname } = require('node:path');
const { Script } = require('node:vm');

/**
 * Runs `file` (which must exist) as a CommonJS module through its code cache; returns its
 * exports. `moduleRequire` is the bundle's require: what it leaves out resolves from there.
 */
function runBundle(file, moduleRequire) {
  const cacheFile = cacheFileOf(file);
  const source = readFileSync(file, 'utf8');
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
  script.runInThisContext()(module_.exports, moduleRequire, module_, file, dirname(file));
  return module_.exports;
}

/**
 * Where the cache of `file` is kept for this process's Node options. V8 rejects a cache made
 * under other V8 flags (svc-relay's launcher starts Node with some: relay/bin/svc-relay.js),
 * so runs with and without them keep a cache each instead of replacing each other's.
 */
function cacheFileOf(file, execArgv = process.execArgv) {
  if (execArgv.length === 0) return `${file}.cache`;
  const tag = createHash('sha256').update(execArgv.join('\0')).digest('hex').slice(0, 8);
  return `${file}.${tag}.cache`;
}

module.exports = { runBundle, cacheFileOf };
