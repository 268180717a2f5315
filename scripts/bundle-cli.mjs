// Bundles the svc CLI into cli/dist/bundle/ (svc.js, which cli/bin/svc.js loads, and one
// chunk per group of commands): a run then reads a few files instead of a few hundred
// modules, and parses only the chunks its command reaches (the program imports each
// command module on demand, and our packages declare no import side effects, so esbuild
// leaves out what a chunk does not use). Part of `npm run build`; never committed.
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLE_DIR = join(ROOT, 'cli', 'dist', 'bundle');

/**
 * Code that finds files next to itself (`new URL('../package.json', import.meta.url)`, the
 * daemon binary) sees the location its compiled module has in `<package>/dist/`, resolved
 * from the chunk's own URL so the checkout can move. Every chunk sits in `outdir`.
 */
const keepModuleLocation = (outdir) => ({
  name: 'keep-module-location',
  setup(b) {
    b.onLoad({ filter: /[\\/](cli|daemon|shared)[\\/]src[\\/].*\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta.url')) return undefined;
      const compiled = args.path.replace(/([\\/])src([\\/])/, '$1dist$2').replace(/\.ts$/, '.js');
      const rel = relative(outdir, compiled).split('\\').join('/');
      return {
        contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`),
        loader: 'ts',
      };
    });
  },
});

/** Writes the bundle into `outdir` (emptied first); resolves to esbuild's metafile. */
export async function bundleCli(outdir = BUNDLE_DIR) {
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: [join(ROOT, 'cli', 'src', 'bin', 'svc.ts')],
    outdir,
    chunkNames: '[name]-[hash]',
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // the workspace packages from their TypeScript sources, as vitest and tsx read them
    conditions: ['source'],
    // CommonJS dependencies (commander) call require(): give the ES modules one
    banner: {
      js: "import { createRequire as __svcRequire } from 'node:module'; const require = __svcRequire(import.meta.url);",
    },
    plugins: [keepModuleLocation(outdir)],
    metafile: true,
    legalComments: 'none',
    // inlines constants across modules, so a chunk that uses one need not load its module
    minifySyntax: true,
    logLevel: 'warning',
  });
  return result.metafile;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await bundleCli();
  process.stderr.write(`bundled the svc CLI into ${relative(ROOT, BUNDLE_DIR)}/\n`);
}
