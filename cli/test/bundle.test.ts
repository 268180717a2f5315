/**
 * The bundled CLI (scripts/bundle-cli.mjs; cli/bin/svc.cjs runs it): it runs on its own
 * and through the runner's code cache, and holds none of the daemon's server side, the
 * relay, or the server libraries (Fastify, pino, better-sqlite3).
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '@svc/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without types
import { bundleCli, ROOT } from '../../scripts/bundle-cli.mjs';

const exec = promisify(execFile);

let dir: string;
let inputs: string[];

beforeAll(async () => {
  // a checkout-like layout: <dir>/cli/bin/svc.cjs runs <dir>/cli/dist/bundle/svc.cjs
  dir = tempDir('svc-cli-bundle-');
  mkdirSync(join(dir, 'cli', 'bin'), { recursive: true });
  copyFileSync(join(ROOT, 'cli', 'bin', 'svc.cjs'), join(dir, 'cli', 'bin', 'svc.cjs'));
  const meta = (await bundleCli(join(dir, 'cli', 'dist', 'bundle'))) as { inputs: Record<string, unknown> };
  inputs = Object.keys(meta.inputs);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the CLI bundle', () => {
  it('runs on its own: --version and a command', async () => {
    const bundle = join(dir, 'cli', 'dist', 'bundle', 'svc.cjs');
    const v = await exec(process.execPath, [bundle, '--version'], { cwd: tmpdir() });
    expect(v.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    const help = await exec(process.execPath, [bundle, 'send', '--help'], { cwd: tmpdir() });
    expect(help.stdout).toContain('Usage: svc send');
  });

  it('runs through the runner, which writes its code cache once and then uses it', async () => {
    const runner = join(dir, 'cli', 'bin', 'svc.cjs');
    const cache = join(dir, 'cli', 'dist', 'bundle', 'svc.cjs.cache');
    expect(existsSync(cache)).toBe(false);
    const first = await exec(process.execPath, [runner, 'send', '--help'], { cwd: tmpdir() });
    expect(first.stdout).toContain('Usage: svc send');
    const written = statSync(cache).mtimeMs;
    const again = await exec(process.execPath, [runner, 'inbox', '--help'], { cwd: tmpdir() });
    expect(again.stdout).toContain('Usage: svc inbox');
    expect(statSync(cache).mtimeMs).toBe(written);
  });

  it('holds no server code, and not the envelope crypto or the document check the daemon does', () => {
    expect(inputs).toContain('cli/src/commands/core.ts');
    expect(inputs).toContain('daemon/src/client/index.ts');
    const left = inputs.filter((p) =>
      /node_modules\/(fastify|@fastify|pino|better-sqlite3|jose|@noble)\/|daemon\/src\/(?!client\/)|relay\/|shared\/src\/(envelope|deployment-document)/.test(
        p,
      ),
    );
    expect(left).toEqual([]);
  });
});
