import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

const ALL_TESTS = '{shared,relay,daemon,cli,tui,desktop,e2e}/{src,test}/**/*.test.ts';
/**
 * Files that need modules of their own: a vi.mock of a module (it cannot replace one that
 * an earlier file in the worker already loaded), fake timers, a changed PATH; or a heap of
 * their own (the scan's retention test watches young-generation collections; in a worker
 * whose heap earlier files' relays and daemons had grown, it once saw its body promoted in
 * 10 attempts out of 10, in a full CI run only, never alone).
 */
const ISOLATED = [
  'shared/src/node/webhooks.test.ts',
  'shared/src/node/scan.test.ts',
  'relay/test/admin-token.test.ts',
  'relay/src/bus/external.test.ts',
];

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
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // the built commands the tests run are current (builds when a source is newer)
    globalSetup: ['./e2e/harness/src/global-setup.ts'],
    pool: 'forks',
    // Most files wait on child processes (relays, nats-server, daemons, the CLI), not on
    // the CPU: three at a time even on two cores (vitest's default there is one).
    maxWorkers: 3,
    reporters: ['default'],
    projects: [
      {
        // A worker keeps the modules it loaded from one file to the next: loading the relay or
        // the daemon from the sources again for each file cost more CPU than most files' tests
        // (a third of the suite's). Tests leave no state behind in modules (nothing shared is
        // mutated; each builds its own relay, daemon, ledger and homes).
        extends: true,
        test: { name: 'shared-modules', include: [ALL_TESTS], exclude: ISOLATED, isolate: false },
      },
      { extends: true, test: { name: 'isolated', include: ISOLATED, isolate: true } },
    ],
  },
});
