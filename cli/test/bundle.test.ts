/**
 * The bundled CLI (scripts/bundle-cli.mjs; cli/bin/svc.cjs runs it): it runs on its own
 * and through the runner's code cache, and holds none of the daemon's server side, the
 * relay, or the server libraries (Fastify, pino, better-sqlite3). The terminal UI is a
 * bundle of its own that `svc tui` runs through a code cache too, in a real pty (`script`),
 * in a checkout without node_modules: what it draws can only come from the bundle.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '@svc/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without types
import { bundleCli, ROOT, warmTuiCodeCache } from '../../scripts/bundle-cli.mjs';

const exec = promisify(execFile);

let dir: string;
let inputs: string[];
let tuiInputs: string[];

beforeAll(async () => {
  // a checkout-like layout: <dir>/cli/bin/svc.cjs runs <dir>/cli/dist/bundle/svc.cjs
  dir = tempDir('svc-cli-bundle-');
  mkdirSync(join(dir, 'cli', 'bin'), { recursive: true });
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(join(ROOT, 'cli', 'bin', 'svc.cjs'), join(dir, 'cli', 'bin', 'svc.cjs'));
  copyFileSync(join(ROOT, 'scripts', 'run-bundle.cjs'), join(dir, 'scripts', 'run-bundle.cjs'));
  type Meta = { inputs: Record<string, unknown> };
  const meta = (await bundleCli(join(dir, 'cli', 'dist', 'bundle'))) as { svc: Meta; tui: Meta };
  inputs = Object.keys(meta.svc.inputs);
  tuiInputs = Object.keys(meta.tui.inputs);
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

  it('leaves the terminal UI out, all but the snapshot loading svc tui starts first', () => {
    expect(inputs).toContain('tui/src/model.ts');
    expect(
      inputs.filter((p) => /node_modules\/(ink|react|react-reconciler|yoga-layout)\/|tui\/src\/app/.test(p)),
    ).toEqual([]);
  });
});

/** `svc tui` in a pty (`script`), with `env`; resolves with what it drew once `until` shows, then quits with q. */
function tuiInPty(home: string, env: Record<string, string>, until: string): Promise<string> {
  const runner = join(dir, 'cli', 'bin', 'svc.cjs');
  const command = [process.execPath, runner, 'tui'].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qefc', command, '/dev/null'], {
    cwd: tmpdir(),
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm', SVC_HOME: home, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let quit = false;
  child.stdin.on('error', () => undefined); // gone already: it quit
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString('utf8');
      if (quit || !out.includes(until)) return;
      quit = true;
      child.stdin.write('q');
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    // a deadline to fail by, not a timing: a tui that never draws would otherwise run on
    const deadline = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(deadline);
      if (out.includes(until)) resolve(out);
      else reject(new Error(`svc tui exited ${code} without "${until}":\n${out}`));
    });
  });
}

describe('the terminal UI bundle', () => {
  it('holds Ink, React (its production build) and yoga, and no top-level await', async () => {
    expect(tuiInputs).toContain('tui/src/app.ts');
    expect(tuiInputs).toContain('node_modules/ink/build/reconciler.js');
    expect(tuiInputs).toContain('node_modules/yoga-layout/dist/src/index.js');
    expect(tuiInputs).toContain('node_modules/react/cjs/react.production.js');
    expect(tuiInputs.filter((p) => p.endsWith('.development.js'))).toEqual([]);
    // a CommonJS file: required on its own, yoga's WebAssembly set up synchronously
    const bundle = join(dir, 'cli', 'dist', 'bundle', 'tui.cjs');
    const script = `const t = require(${JSON.stringify(bundle)}); console.log(Object.keys(t).sort().join(','))`;
    const r = await exec(process.execPath, ['-e', script], { cwd: tmpdir() });
    expect(r.stdout).toBe('Dashboard,PACKAGE,loadSnapshot,runTui\n');
  });

  it('svc tui draws from it, with CI set, and through its code cache from the second run on', async () => {
    const home = tempDir('svc-tui-bundle-home-');
    const cache = join(dir, 'cli', 'dist', 'bundle', 'tui.cjs.cache');
    try {
      expect(existsSync(cache)).toBe(false);
      // no daemon in this home: the screen that says so, drawn although CI=true
      const first = await tuiInPty(home, { CI: 'true' }, 'The svc daemon is not running.');
      expect(first).toContain('svc start');
      const written = statSync(cache).mtimeMs;
      await tuiInPty(home, {}, 'The svc daemon is not running.');
      expect(statSync(cache).mtimeMs).toBe(written);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);

  it('the build writes its code cache with one svc tui in a pseudo-terminal', async () => {
    const cache = join(dir, 'cli', 'dist', 'bundle', 'tui.cjs.cache');
    rmSync(cache, { force: true });
    expect(await warmTuiCodeCache(join(dir, 'cli', 'bin', 'svc.cjs'))).toBe(true);
    expect(existsSync(cache)).toBe(true);
  }, 60_000);
});
