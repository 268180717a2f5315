/**
 * One test harness, and packages reached by name: a package's tests reach another
 * package's test code only through `@svc/test-harness` (e2e/harness), and its code only
 * through what it exports, never by a relative path into its folder.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', 'release', '.git']);
const SOURCE = /\.(ts|tsx|mts|mjs|js)$/;
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (SOURCE.test(entry.name)) yield path;
  }
}

const PACKAGES = new Set(['shared', 'relay', 'daemon', 'cli', 'tui', 'desktop', 'e2e', 'e2e/harness']);

/** The package a repo-relative path belongs to: e2e/harness is its own package. */
const packageOf = (rel: string): string =>
  rel.startsWith(`e2e${sep}harness${sep}`) ? 'e2e/harness' : rel.split(sep)[0]!;

/**
 * Relative imports that cross into another package (its sources, its tests, the harness),
 * as "file → specifier": a package is reached by its name, through what it exports.
 * Folders that are not packages (scripts/, the root's configs) may be imported; bench/
 * measures packages' internal pieces against their baselines, so it may reach them.
 */
export function crossPackageTestImports(files: Iterable<[string, string]>): string[] {
  const bad: string[] = [];
  for (const [rel, text] of files) {
    if (rel.startsWith(`bench${sep}`)) continue;
    for (const [, spec] of text.matchAll(SPECIFIER)) {
      if (!spec?.startsWith('.')) continue;
      const target = relative(ROOT, resolve(ROOT, dirname(rel), spec));
      const from = packageOf(rel);
      const to = packageOf(target);
      if (from === to) continue;
      if (PACKAGES.has(to)) bad.push(`${rel} → ${spec}`);
    }
  }
  return bad;
}

describe('test imports', () => {
  it('the check catches a relative import of another package’s test helpers or of the harness', () => {
    expect(
      crossPackageTestImports([
        ['daemon/test/x.test.ts', "import { spawnRelay } from '../../relay/test/helpers/relay-process.js';"],
        ['bench/x.ts', "import { bench } from '../relay/src/bus/index.js';"],
        ['e2e/test/x.test.ts', "const m = await import('../../daemon/test/helpers.js');"],
        ['relay/src/x.test.ts', "import { insertGrant } from '../test/helpers/ledger-rows.js';"],
        ['relay/test/x.test.ts', "import { until } from '@svc/test-harness';"],
        ['e2e/test/y.test.ts', "import { FileVault } from '../../daemon/src/vault/index.js';"],
        ['e2e/harness/src/z.ts', "import { staleSource } from '../../../scripts/build-stamp.mjs';"],
      ]),
    ).toEqual([
      'daemon/test/x.test.ts → ../../relay/test/helpers/relay-process.js',
      'e2e/test/x.test.ts → ../../daemon/test/helpers.js',
      'e2e/test/y.test.ts → ../../daemon/src/vault/index.js',
    ]);
  });

  it('no package imports another package’s files by path (its name, or @svc/test-harness)', () => {
    const files = function* (): Generator<[string, string]> {
      for (const path of sourceFiles(ROOT)) {
        // this file's own examples are the only allowed mentions
        if (path !== fileURLToPath(import.meta.url)) yield [relative(ROOT, path), readFileSync(path, 'utf8')];
      }
    };
    expect(crossPackageTestImports(files())).toEqual([]);
  });
});
