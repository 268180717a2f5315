#!/usr/bin/env node
// `svc-relay` as npm links it at install time (committed, so the link exists before any
// build). It runs the compiled relay that `npm run build` writes.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/bin/svc-relay.js', import.meta.url);
if (!existsSync(entry)) {
  const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
  process.stderr.write(`svc-relay: the relay is not built yet; build it with: npm run build --prefix ${root}\n`);
  process.exit(1);
}
await import(entry.href);
