/**
 * The build's stamp: `npm run build` ends by writing `.tmp/build-stamp`; tests that run the
 * built commands (svc, svc-relay, svc-daemon, as users run them) first check that no source
 * the build reads is newer than the stamp, and build again when one is (e2e/harness's
 * global setup). tsc --build leaves unchanged outputs untouched, so their own times cannot
 * tell a current build from a stale one.
 *
 * `node scripts/build-stamp.mjs` writes the stamp; `staleSource()` names a newer source.
 */
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const STAMP = join(ROOT, '.tmp', 'build-stamp');

// what `npm run build` reads: package sources, the CLI's runner, the build scripts, configs
const INPUTS = [
  'shared/src',
  'relay/src',
  'daemon/src',
  'daemon/dashboard',
  'cli/src',
  'cli/bin',
  'relay/bin',
  'tui/src',
  'scripts/bundle-cli.mjs',
  'scripts/bundle-relay.mjs',
  'scripts/run-bundle.cjs',
  'tsconfig.json',
  'tsconfig.base.json',
  ...['shared', 'relay', 'daemon', 'cli', 'tui'].flatMap((p) => [`${p}/package.json`, `${p}/tsconfig.json`]),
];
const isTest = (name) => /\.test\.[cm]?[jt]sx?$/.test(name);

function* files(path) {
  let s;
  try {
    s = statSync(path);
  } catch {
    return; // an optional input (a package without its own tsconfig)
  }
  if (s.isFile()) {
    yield [path, s.mtimeMs];
    return;
  }
  for (const name of readdirSync(path)) {
    if (name === 'node_modules' || name === 'dist' || isTest(name)) continue;
    yield* files(join(path, name));
  }
}

/** The first input newer than the stamp (relative path), 'no build yet' without one, or undefined. */
export function staleSource() {
  let stamp;
  try {
    stamp = statSync(STAMP).mtimeMs;
  } catch {
    return 'no build yet';
  }
  for (const input of INPUTS) {
    for (const [path, mtime] of files(join(ROOT, input))) {
      if (mtime > stamp) return relative(ROOT, path);
    }
  }
  return undefined;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  mkdirSync(dirname(STAMP), { recursive: true });
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
}
