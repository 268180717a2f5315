import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

// Tests run the TypeScript sources: package names resolve to src, not dist.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@svc\/shared\/node$/, replacement: src('./shared/src/node/index.ts') },
      { find: /^@svc\/shared$/, replacement: src('./shared/src/index.ts') },
      { find: /^@svc\/relay$/, replacement: src('./relay/src/index.ts') },
      { find: /^@svc\/daemon\/client$/, replacement: src('./daemon/src/client/index.ts') },
      { find: /^@svc\/daemon$/, replacement: src('./daemon/src/index.ts') },
      { find: /^@svc\/tui$/, replacement: src('./tui/src/index.ts') },
      { find: /^@svc\/tui\/model$/, replacement: src('./tui/src/model.ts') },
      { find: /^@svc\/cli$/, replacement: src('./cli/src/index.ts') },
      // the test harness: one entry point per file (see e2e/harness/package.json exports)
      { find: /^@svc\/test-harness$/, replacement: src('./e2e/harness/src/index.ts') },
      { find: /^@svc\/test-harness\/([a-z-]+)$/, replacement: `${src('./e2e/harness/src/')}$1.ts` },
    ],
  },
  test: {
    include: ['{shared,relay,daemon,cli,tui,desktop,e2e}/{src,test}/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // the built commands the tests run are current (builds when a source is newer)
    globalSetup: ['./e2e/harness/src/global-setup.ts'],
    pool: 'forks',
    // Most files wait on child processes (relays, nats-server, daemons, the CLI), not on
    // the CPU: three at a time even on two cores (vitest's default there is one).
    maxWorkers: 3,
    reporters: ['default'],
  },
});
