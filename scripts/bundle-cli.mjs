// Bundles the svc CLI into one CommonJS file, cli/dist/bundle/svc.cjs, that cli/bin/svc.cjs
// runs through a V8 code cache (svc.cjs.cache beside it, written here and renewed by the
// runner when Node rejects it): a run reads two files instead of a few hundred modules and
// compiles nothing it compiled before. The program imports each command module on demand,
// which esbuild keeps as lazy initialisation: a run executes only its command's code.
// The terminal UI (`svc tui`: @svc/tui with Ink, React and yoga-layout) is a second file,
// tui.cjs (its cache written by one `svc tui` in a pseudo-terminal, below), that the runner
// loads the same way for that command only: from node_modules,
// as a few hundred ES modules with React's development build, it took ~0.5 s to load. Part
// of `npm run build`; the output is never committed.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLE_DIR = join(ROOT, 'cli', 'dist', 'bundle');

/** What every command's bundle is: one CommonJS file for node, as the runners load it. */
export const NODE_BUNDLE = {
  outExtension: { '.js': '.cjs' },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // the workspace packages from their TypeScript sources, as vitest and tsx read them
  conditions: ['source'],
};

/**
 * Code that finds files next to itself (`new URL('../package.json', import.meta.url)`, the
 * daemon binary) sees the location its compiled module has in `<package>/dist/`, resolved
 * from the bundle's own directory so the checkout can move.
 */
export const keepModuleLocation = (outdir) => ({
  name: 'keep-module-location',
  setup(b) {
    b.onLoad({ filter: /[\\/](cli|daemon|relay|shared)[\\/]src[\\/].*\.ts$/ }, (args) => {
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
  'printable',
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

/** `text` with `from` replaced by `to`, where `from` must occur exactly once. */
function replaceOnce(text, from, to, file) {
  const n = text.split(from).length - 1;
  if (n !== 1)
    throw new Error(
      `${file}: expected one ${JSON.stringify(from.slice(0, 60))}, found ${n}: update ${import.meta.filename}`,
    );
  return text.replace(from, to);
}

/**
 * Ink and yoga-layout use top-level await, which a CommonJS file cannot hold (and only a
 * CommonJS file runs through the runner's code cache). Both awaits have a synchronous
 * equivalent: Ink's only load React devtools when DEV=true (left out here), and yoga's
 * wait for its WebAssembly module, which emscripten's loader sets up synchronously when
 * `instantiateWasm` hands it an instance at once. A dependency update that changes this
 * code fails the build, by name.
 */
const tuiWithoutTopLevelAwait = {
  name: 'tui-without-top-level-await',
  setup(b) {
    b.onLoad({ filter: /[\\/]ink[\\/]build[\\/]reconciler\.js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      text = replaceOnce(text, "await import('./devtools.js');", '/* React devtools: not in the bundle */', args.path);
      text = replaceOnce(text, 'await loadPackageJson()', "({ name: 'ink', version: undefined })", args.path);
      return { contents: text, loader: 'js' };
    });
    // the wasm binary, as base64 in the loader's source: kept once, as an export
    b.onLoad({ filter: /[\\/]yoga-layout[\\/]dist[\\/]binaries[\\/]yoga-wasm-base64-esm\.js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      const wasm = /"data:application\/octet-stream;base64,([A-Za-z0-9+/=]+)"/.exec(text);
      if (!wasm) throw new Error(`${args.path}: no base64 wasm binary: update ${import.meta.filename}`);
      text = replaceOnce(text, wasm[0], '""', args.path);
      text = replaceOnce(text, 'import.meta.url', 'undefined', args.path);
      return { contents: `${text}\nexport const wasmBase64 = ${JSON.stringify(wasm[1])};\n`, loader: 'js' };
    });
    b.onLoad({ filter: /[\\/]yoga-layout[\\/]dist[\\/]src[\\/]index\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      const contents = replaceOnce(
        text,
        'const Yoga = wrapAssembly(await loadYoga());',
        `import { wasmBase64 } from '../binaries/yoga-wasm-base64-esm.js';
const yogaModule = {
  instantiateWasm(imports, receive) {
    const instance = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(wasmBase64, 'base64')), imports);
    receive(instance);
    return instance.exports;
  },
};
loadYoga(yogaModule);
if (!yogaModule.calledRun) throw new Error('yoga-layout did not start synchronously');
const Yoga = wrapAssembly(yogaModule);`,
        args.path,
      );
      return { contents, loader: 'js', resolveDir: dirname(args.path) };
    });
  },
};

/** Only `@svc/tui` itself is left out of the CLI bundle: `@svc/tui/model` is small and in it. */
const tuiLeftOut = {
  name: 'tui-left-out',
  setup(b) {
    b.onResolve({ filter: /^@svc\/tui$/ }, (args) => ({ path: args.path, external: true }));
  },
};

/**
 * Writes `outdir/svc.cjs` and `outdir/tui.cjs` (the directory emptied first); resolves to
 * esbuild's metafiles, `{ svc, tui }`.
 */
export async function bundleCli(outdir = BUNDLE_DIR) {
  rmSync(outdir, { recursive: true, force: true });
  const [svc, tui] = await Promise.all([bundleSvc(outdir), bundleTui(outdir)]);
  return { svc, tui };
}

async function bundleSvc(outdir) {
  const result = await build({
    entryPoints: { svc: join(ROOT, 'cli', 'src', 'bin', 'svc.ts') },
    outdir,
    ...NODE_BUNDLE,
    plugins: [keepModuleLocation(outdir), sharedWithoutCrypto, tuiLeftOut],
    // Loaded by the one command that needs them, so every other run's bundle stays small:
    // the terminal UI (tui.cjs, below; from node_modules when run from the sources) and the
    // MCP SDK with zod (\`svc mcp\`), from node_modules.
    external: ['@modelcontextprotocol/sdk', 'zod'],
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  return result.metafile;
}

/** `outdir/tui.cjs`: @svc/tui with everything it imports, and React's production build. */
async function bundleTui(outdir) {
  const result = await build({
    entryPoints: { tui: join(ROOT, 'tui', 'src', 'index.ts') },
    outdir,
    ...NODE_BUNDLE,
    // React's development build checks and warns as it renders, at twice the size
    define: { 'process.env.NODE_ENV': '"production"' },
    // (the daemon client it shares finds the daemon binary next to its compiled module)
    plugins: [keepModuleLocation(outdir), tuiWithoutTopLevelAwait],
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

/**
 * Runs `svc tui` once in a pseudo-terminal (`script`, util-linux) with an empty SVC_HOME:
 * it draws the daemon-down screen and quits on `q`, and the runner writes tui.cjs.cache as
 * it exits, holding what a start compiles. Otherwise the first real `svc tui` writes it,
 * when it exits, after a session that may have lasted hours. Resolves whether it did.
 */
export function warmTuiCodeCache(runner = join(ROOT, 'cli', 'bin', 'svc.cjs')) {
  const home = mkdtempSync(join(tmpdir(), 'svc-tui-warm-'));
  const quote = (a) => `'${a.replaceAll("'", "'\\''")}'`;
  const child = spawn('script', ['-qefc', [process.execPath, runner, 'tui'].map(quote).join(' '), '/dev/null'], {
    cwd: tmpdir(),
    env: { ...process.env, TERM: process.env.TERM || 'xterm', SVC_HOME: home },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  return new Promise((done) => {
    let out = '';
    let quit = false;
    // a deadline, so that a build never waits on a tui that does not draw
    const deadline = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const finish = (ok) => {
      clearTimeout(deadline);
      rmSync(home, { recursive: true, force: true });
      done(ok);
    };
    child.stdin.on('error', () => undefined);
    child.stdout.on('data', (d) => {
      out += d;
      if (quit || !out.includes('svc start')) return;
      quit = true;
      child.stdin.write('q');
    });
    child.once('error', () => finish(false)); // no `script` here
    child.once('close', (code) => finish(quit && code === 0));
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await bundleCli();
  warmCodeCache();
  if (!(await warmTuiCodeCache())) process.stderr.write('the first svc tui will write its code cache\n');
  process.stderr.write(`bundled the svc CLI into ${relative(ROOT, BUNDLE_DIR)}/\n`);
}
