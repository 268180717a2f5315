#!/usr/bin/env node
// `svc` as npm links it at install time (committed, so the link exists before any build).
// It loads the one-file CLI bundle that `npm run build` writes: starting it costs little.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const bundle = new URL('../dist/bundle/svc.js', import.meta.url);
if (!existsSync(bundle)) {
  const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
  process.stderr.write(`svc: the CLI is not built yet; build it with: npm run build --prefix ${root}\n`);
  process.exit(1);
}
await import(bundle.href);
