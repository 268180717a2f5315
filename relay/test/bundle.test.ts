/**
 * The bundled svc-relay command (scripts/bundle-relay.mjs; relay/bin/svc-relay.js runs it
 * through a code cache): the bin runs the bundle with no compiled relay beside it, writes
 * the cache once and then uses it, and the bundle holds the relay's libraries but not the
 * native SQLite addon or the PostgreSQL driver, which load from node_modules.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { runChild } from '@svc/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without types
import { ROOT } from '../../scripts/bundle-cli.mjs';
// @ts-expect-error: a plain ES module script without types
import { bundleRelay, launcherFlags } from '../../scripts/bundle-relay.mjs';

const { cacheFileOf } = createRequire(import.meta.url)('../../scripts/run-bundle.cjs') as {
  cacheFileOf(file: string, execArgv: string[]): string;
};

let dir: string;
let inputs: string[];

beforeAll(async () => {
  // a checkout-like layout without relay/dist/bin (only the bundle), inside this checkout so
  // that the modules the bundle leaves out resolve from its node_modules
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  dir = mkdtempSync(join(ROOT, '.tmp', 'relay-bundle-'));
  mkdirSync(join(dir, 'relay', 'bin'), { recursive: true });
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(join(ROOT, 'relay', 'package.json'), join(dir, 'relay', 'package.json'));
  copyFileSync(join(ROOT, 'relay', 'bin', 'svc-relay.js'), join(dir, 'relay', 'bin', 'svc-relay.js'));
  copyFileSync(join(ROOT, 'scripts', 'run-bundle.cjs'), join(dir, 'scripts', 'run-bundle.cjs'));
  const meta = (await bundleRelay(join(dir, 'relay', 'dist', 'bundle'))) as { inputs: Record<string, unknown> };
  inputs = Object.keys(meta.inputs);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the svc-relay bundle', () => {
  it('runs through the bin without a compiled relay, writes its code cache once and then uses it', async () => {
    const bin = join(dir, 'relay', 'bin', 'svc-relay.js');
    const cache = join(dir, 'relay', 'dist', 'bundle', 'svc-relay.cjs.cache');
    expect(existsSync(join(dir, 'relay', 'dist', 'bin'))).toBe(false);
    expect(existsSync(cache)).toBe(false);
    const first = await runChild(process.execPath, [bin, '--version']);
    expect(first).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    const written = statSync(cache).mtimeMs;
    const grant = await runChild(process.execPath, [bin, 'grant', '--help']);
    expect(grant.code).toBe(0);
    expect(grant.stdout).toContain('Usage: svc-relay grant');
    expect(statSync(cache).mtimeMs).toBe(written);
  });

  it('runs through its first line with the Node flags it names, which npm start gives it too, under a code cache of their own', async () => {
    const bin = join(dir, 'relay', 'bin', 'svc-relay.js');
    const bundle = join(dir, 'relay', 'dist', 'bundle', 'svc-relay.cjs');
    const flags = launcherFlags() as string[];
    expect(flags).toEqual(['--min-semi-space-size=16']);
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${flags.join(' ')}`);
    const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
      .scripts.start;
    expect(start).toContain(`node ${flags.join(' ')} relay/bin/svc-relay.js dev`);

    const plain = cacheFileOf(bundle, []);
    await runChild(process.execPath, [bin, '--version']);
    const plainWritten = statSync(plain).mtimeMs;
    // executed as a file, as npm's link runs it: the kernel reads the first line
    const first = await runChild(bin, ['--version']);
    expect(first).toMatchObject({ code: 0, stdout: '0.1.0\n' });
    const flagged = cacheFileOf(bundle, flags);
    expect(flagged).not.toBe(plain);
    const written = statSync(flagged).mtimeMs;
    expect(await runChild(bin, ['grant', '--help'])).toMatchObject({ code: 0 });
    expect(await runChild(process.execPath, [bin, '--version'])).toMatchObject({ code: 0 });
    // neither run replaced the other's cache (V8 takes a cache only under the flags it was made with)
    expect(statSync(flagged).mtimeMs).toBe(written);
    expect(statSync(plain).mtimeMs).toBe(plainWritten);
  });

  it('holds the relay and its libraries, and leaves the SQLite addon and the PostgreSQL driver out', () => {
    expect(inputs).toContain('relay/src/bin/svc-relay.ts');
    expect(inputs.some((p) => p.includes('node_modules/fastify/'))).toBe(true);
    expect(inputs.filter((p) => /node_modules\/(better-sqlite3|pg)\//.test(p))).toEqual([]);
  });
});
