#!/usr/bin/env node
// `svc` as npm links it at install time (committed, so the link exists before any build).
// It runs the one-file CLI bundle that `npm run build` writes, through a V8 code cache kept
// beside it (scripts/run-bundle.cjs): scripts call svc in loops, and compiling the bundle
// would cost each run more than everything else it does before it talks to the daemon.
// `svc tui` loads a second bundle, the terminal UI, the same way.
'use strict';
const { existsSync } = require('node:fs');
const { join, resolve } = require('node:path');

const dir = join(__dirname, '..', 'dist', 'bundle');
const BUNDLES = { svc: 'the CLI', tui: 'the terminal UI' };

class NotBuiltError extends Error {}

/**
 * What to run when a bundle is missing: the build, and first `npm ci` when the checkout's npm
 * packages (tsc among them) are not installed, as on a fresh clone.
 */
function notBuilt(what) {
  const root = resolve(__dirname, '..', '..');
  const at = /^[\w/.,:@%+=-]+$/.test(root) ? root : `'${root.replace(/'/g, "'\\''")}'`;
  const install = existsSync(join(root, 'node_modules', '.package-lock.json'))
    ? ''
    : `svc: the npm packages are not installed; install them first with: npm ci --prefix ${at}\n`;
  return `${install}svc: ${what} is not built yet; build it with: npm run build --prefix ${at}`;
}

/** Runs `<dir>/<name>.cjs` through its code cache; returns its exports. */
function runBundle(name) {
  const file = join(dir, `${name}.cjs`);
  if (!existsSync(file)) throw new NotBuiltError(notBuilt(BUNDLES[name]));
  return require('../../scripts/run-bundle.cjs').runBundle(file, require);
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
