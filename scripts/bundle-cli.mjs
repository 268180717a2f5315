// Bundles the svc CLI into one CommonJS file, cli/dist/bundle/svc.cjs, that cli/bin/svc.cjs
// runs through a V8 code cache (svc.cjs.cache beside it, written here and renewed by the
// runner when Node rejects it): a run reads two files instead of a few hundred modules and
// compiles nothing it compiled before. The program imports each command module on demand,
// which esbuild keeps as lazy initialisation: a run executes only its command's code. Part
// of `npm run build`; the output is never committed.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLE_DIR = join(ROOT, 'cli', 'dist', 'bundle');

/**
 * Code that finds files next to itself (`new URL('../package.json', import.meta.url)`, the
 * daemon binary) sees the location its compiled module has in `<package>/dist/`, resolved
 * from the bundle's own directory so the checkout can move.
 */
const keepModuleLocation = (outdir) => ({
  name: 'keep-module-location',
  setup(b) {
    b.onLoad({ filter: /[\\/](cli|daemon|shared)[\\/]src[\\/].*\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return undefined;
      const compiled = args.path.replace(/([\\/])src([\\/])/, '$1dist$2').replace(/\.ts$/, '.js');
      const rel = relative(outdir, compiled).split('\\').join('/');
      const url = `require('node:url').pathToFileURL(require('node:path').join(__dirname, ${JSON.stringify(rel)})).href`;
      return { contents: text.replaceAll('import.meta.url', url), loader: 'ts' };
    });
  },
});

/**
 * The CLI reads constants and schemas from `@svc/shared`, never the envelope crypto (the
 * daemon seals and opens messages) or the deployment document check (the daemon verifies
 * it): its `@svc/shared` is the package without those two, so a run does not set up their
 * libraries. A CLI import of either fails this build, by name.
 */
const SHARED_FOR_CLI = [
  'base64url',
  'canonical-json',
  'enrollment-code',
  'errors',
  'schemas/index',
  'signed-statements',
];
const sharedWithoutCrypto = {
  name: 'shared-without-crypto',
  setup(b) {
    b.onResolve({ filter: /^@svc\/shared$/ }, (args) =>
      /[\\/](cli|daemon)[\\/]src[\\/]/.test(args.importer) ? { path: 'shared-for-cli', namespace: 'svc' } : undefined,
    );
    b.onLoad({ filter: /^shared-for-cli$/, namespace: 'svc' }, () => ({
      contents: SHARED_FOR_CLI.map(
        (m) => `export * from ${JSON.stringify(join(ROOT, 'shared', 'src', `${m}.ts`))};`,
      ).join('\n'),
      resolveDir: join(ROOT, 'shared', 'src'),
      loader: 'ts',
    }));
  },
};

/** Writes `outdir/svc.cjs` (the directory emptied first); resolves to esbuild's metafile. */
export async function bundleCli(outdir = BUNDLE_DIR) {
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { svc: join(ROOT, 'cli', 'src', 'bin', 'svc.ts') },
    outdir,
    outExtension: { '.js': '.cjs' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // the workspace packages from their TypeScript sources, as vitest and tsx read them
    conditions: ['source'],
    plugins: [keepModuleLocation(outdir), sharedWithoutCrypto],
    // Loaded from node_modules by the one command that needs them, so every other run's
    // bundle stays small: the terminal UI (ink has top-level await, which CommonJS cannot
    // hold: an ES module import() at run time) and the MCP SDK with zod (\`svc mcp\`).
    external: ['@svc/tui', '@modelcontextprotocol/sdk', 'zod'],
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  return result.metafile;
}

/** Runs the bundle once through the runner so its code cache exists before the first real run. */
export function warmCodeCache() {
  // a command's help compiles what every run needs (the program, one command module)
  execFileSync(process.execPath, [join(ROOT, 'cli', 'bin', 'svc.cjs'), 'send', '--help'], { stdio: 'ignore' });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await bundleCli();
  warmCodeCache();
  process.stderr.write(`bundled the svc CLI into ${relative(ROOT, BUNDLE_DIR)}/\n`);
}
