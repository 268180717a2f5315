// Bundles the svc-relay command into one CommonJS file, relay/dist/bundle/svc-relay.cjs,
// that relay/bin/svc-relay.js runs through a V8 code cache (scripts/run-bundle.cjs; the
// cache is written here and renewed by the runner when Node rejects it). From the compiled
// modules in relay/dist, a start read and compiled some 600 modules (Fastify, NATS, ajv,
// TypeBox …) before parsing its arguments: ~0.45 s of CPU for every `svc-relay grant`; from
// the bundle and its cache, ~0.1 s. The native and database drivers (better-sqlite3, pg)
// stay in node_modules. Part of `npm run build`; the output is never committed.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { keepModuleLocation, NODE_BUNDLE, ROOT } from './bundle-cli.mjs';

export const RELAY_BUNDLE_DIR = join(ROOT, 'relay', 'dist', 'bundle');

/** Writes `outdir/svc-relay.cjs` (the directory emptied first); resolves to esbuild's metafile. */
export async function bundleRelay(outdir = RELAY_BUNDLE_DIR) {
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { 'svc-relay': join(ROOT, 'relay', 'src', 'bin', 'svc-relay.ts') },
    outdir,
    ...NODE_BUNDLE,
    plugins: [keepModuleLocation(outdir)],
    // a native addon, and the PostgreSQL driver with its optional native binding
    external: ['better-sqlite3', 'pg', 'pg-native'],
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  return result.metafile;
}

/** The Node flags of the svc-relay launcher's first line (`#!/usr/bin/env -S node …`). */
export function launcherFlags() {
  const first = readFileSync(join(ROOT, 'relay', 'bin', 'svc-relay.js'), 'utf8').split('\n')[0];
  return first.split(/\s+/).filter((a) => a.startsWith('--'));
}

/**
 * Runs the bundle through the runner so its code caches exist before the first real run:
 * one for `node svc-relay.js` and one for the launcher's flags (V8 takes a cache only under
 * the flags it was made with).
 */
export function warmRelayCodeCache() {
  const bin = join(ROOT, 'relay', 'bin', 'svc-relay.js');
  for (const flags of [[], launcherFlags()]) {
    // a command's help loads every module (the command imports them all) and its top-level code
    execFileSync(process.execPath, [...flags, bin, 'grant', '--help'], { stdio: 'ignore' });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await bundleRelay();
  warmRelayCodeCache();
  process.stderr.write(`bundled the svc-relay command into ${relative(ROOT, RELAY_BUNDLE_DIR)}/\n`);
}
