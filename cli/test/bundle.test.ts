/**
 * The bundled CLI (scripts/bundle-cli.mjs, what cli/bin/svc.js loads): it runs, and the
 * code `svc send` and `svc inbox` load holds none of the daemon's server side or the
 * heavy libraries they do not use.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script without types
import { bundleCli, ROOT } from '../../scripts/bundle-cli.mjs';

const exec = promisify(execFile);

interface Metafile {
  outputs: Record<
    string,
    { imports: Array<{ path: string; kind: string }>; inputs: Record<string, unknown>; entryPoint?: string }
  >;
}

let outdir: string;
let meta: Metafile;

beforeAll(async () => {
  outdir = mkdtempSync(join(tmpdir(), 'svc-cli-bundle-'));
  meta = (await bundleCli(outdir)) as Metafile;
}, 60_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** Inputs of every chunk loaded, statically, with the chunk `from` (esbuild's paths). */
function loadedWith(from: string): string[] {
  const seen = new Set<string>();
  const visit = (chunk: string) => {
    if (seen.has(chunk)) return;
    seen.add(chunk);
    for (const i of meta.outputs[chunk]?.imports ?? []) if (i.kind === 'import-statement') visit(i.path);
  };
  visit(from);
  return [...seen].flatMap((c) => Object.keys(meta.outputs[c]?.inputs ?? {}));
}

/** The chunk whose code comes from this source file. */
function chunkOf(source: string): string {
  const hit = Object.entries(meta.outputs).find(([, o]) => Object.keys(o.inputs).includes(source));
  if (!hit) throw new Error(`no chunk holds ${source}`);
  return hit[0];
}

describe('the CLI bundle', () => {
  it('runs: --version and a command', async () => {
    const entry = join(outdir, 'svc.js');
    const v = await exec(process.execPath, [entry, '--version'], { cwd: tmpdir() });
    expect(v.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    const help = await exec(process.execPath, [entry, 'send', '--help'], { cwd: tmpdir() });
    expect(help.stdout).toContain('Usage: svc send');
  });

  it('svc send and svc inbox load no server code and none of the libraries they do not need', () => {
    const entry = Object.keys(meta.outputs).find((o) => meta.outputs[o]?.entryPoint);
    const core = chunkOf(
      relative(ROOT, join(ROOT, 'cli', 'src', 'commands', 'core.ts'))
        .split('\\')
        .join('/'),
    );
    const program = chunkOf('cli/src/program.ts');
    const loaded = [...loadedWith(entry as string), ...loadedWith(program), ...loadedWith(core)];
    expect(loaded).toContain('cli/src/commands/core.ts');
    const forbidden = loaded.filter((p) =>
      /node_modules\/(fastify|pino|better-sqlite3|@sinclair\/typebox|jose|@noble)\/|daemon\/src\/(?!client\/)|relay\//.test(
        p,
      ),
    );
    expect(forbidden).toEqual([]);
    // and no other command module comes along
    expect(loaded.filter((p) => p.startsWith('cli/src/commands/') && p !== 'cli/src/commands/core.ts')).toEqual([]);
  });
});
