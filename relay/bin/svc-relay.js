#!/usr/bin/env -S node --min-semi-space-size=16
// `svc-relay` as npm links it at install time (committed, so the link exists before any
// build). It runs the one-file bundle that `npm run build` writes, through a V8 code cache
// (scripts/run-bundle.cjs): operators, scripts and the tests start it often, and loading
// the compiled relay's few hundred modules cost each start ~0.4 s of CPU. Without the
// bundle (a `tsc --build` alone), it runs the compiled relay.
//
// The first line starts Node with a young generation of its full 16 MiB (V8's default
// maximum on 64-bit) from the start. V8 otherwise starts it at 1 MiB and shrinks it back
// to that after a quiet spell; a relay taking a burst of sends then collected garbage every
// few milliseconds and promoted its requests' short-lived data to the old generation
// (docs/decisions.md, "The relay's young generation"). Started as `node svc-relay.js`,
// that line is not read: pass the flag yourself (docs/operators.md).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const bundle = fileURLToPath(new URL('../dist/bundle/svc-relay.cjs', import.meta.url));
const entry = new URL('../dist/bin/svc-relay.js', import.meta.url);
if (existsSync(bundle)) {
  const require = createRequire(import.meta.url);
  require('../../scripts/run-bundle.cjs').runBundle(bundle, createRequire(bundle));
} else if (existsSync(entry)) {
  await import(entry.href);
} else {
  const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
  const at = /^[\w/.,:@%+=-]+$/.test(root) ? root : `'${root.replace(/'/g, "'\\''")}'`;
  // on a fresh clone the npm packages (tsc among them) are not installed yet
  if (!existsSync(resolve(root, 'node_modules', '.package-lock.json'))) {
    process.stderr.write(
      `svc-relay: the npm packages are not installed; install them first with: npm ci --prefix ${at}\n`,
    );
  }
  process.stderr.write(`svc-relay: the relay is not built yet; build it with: npm run build --prefix ${at}\n`);
  process.exit(1);
}
