/**
 * One test harness: a package's tests reach another package's test code only through
 * `@svc/test-harness` (e2e/harness), never by a relative path into its test folder, and
 * nobody imports the harness by path.
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

/** The package a repo-relative path belongs to: e2e/harness is its own package. */
const packageOf = (rel: string): string =>
  rel.startsWith(`e2e${sep}harness${sep}`) ? 'e2e/harness' : rel.split(sep)[0]!;

/** Relative imports that cross into another package's tests or into the harness, as "file → specifier". */
export function crossPackageTestImports(files: Iterable<[string, string]>): string[] {
  const bad: string[] = [];
  for (const [rel, text] of files) {
    for (const [, spec] of text.matchAll(SPECIFIER)) {
      if (!spec?.startsWith('.')) continue;
      const target = relative(ROOT, resolve(ROOT, dirname(rel), spec));
      const from = packageOf(rel);
      const to = packageOf(target);
      if (from === to) continue;
      const parts = target.split(sep);
      if (to === 'e2e/harness' || parts[1] === 'test') bad.push(`${rel} → ${spec}`);
    }
  }
  return bad;
}

describe('test imports', () => {
  it('the check catches a relative import of another package’s test helpers or of the harness', () => {
    expect(
      crossPackageTestImports([
        ['daemon/test/x.test.ts', "import { spawnRelay } from '../../relay/test/helpers/relay-process.js';"],
        ['bench/x.ts', "import { until } from '../e2e/harness/src/index.js';"],
        ['e2e/test/x.test.ts', "const m = await import('../../daemon/test/helpers.js');"],
        ['relay/src/x.test.ts', "import { insertGrant } from '../test/helpers/ledger-rows.js';"],
        ['relay/test/x.test.ts', "import { until } from '@svc/test-harness';"],
      ]),
    ).toEqual([
      'daemon/test/x.test.ts → ../../relay/test/helpers/relay-process.js',
      'bench/x.ts → ../e2e/harness/src/index.js',
      'e2e/test/x.test.ts → ../../daemon/test/helpers.js',
    ]);
  });

  it('no package imports another package’s test files by path (use @svc/test-harness)', () => {
    const files = function* (): Generator<[string, string]> {
      for (const path of sourceFiles(ROOT)) {
        // this file's own examples are the only allowed mentions
        if (path !== fileURLToPath(import.meta.url)) yield [relative(ROOT, path), readFileSync(path, 'utf8')];
      }
    };
    expect(crossPackageTestImports(files())).toEqual([]);
  });
});
