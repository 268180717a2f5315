/**
 * Builds the dashboard page into daemon/dist/dashboard-page (index.html, app.js, app.css,
 * icon.svg): one bundle, no inline script or style, so the strict CSP holds.
 * `node daemon/dashboard/build.mjs [--if-stale]`; tests import buildDashboard().
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
export const DASHBOARD_OUT = join(here, '..', 'dist', 'dashboard-page');

function newest(dir) {
  let t = 0;
  for (const name of readdirSync(dir, { recursive: true })) {
    const p = join(dir, String(name));
    const s = statSync(p);
    if (s.isFile()) t = Math.max(t, s.mtimeMs);
  }
  return t;
}

/** Whether the built page is older than its sources (or missing). */
export function dashboardStale(outdir = DASHBOARD_OUT) {
  const built = join(outdir, 'app.js');
  if (!existsSync(built)) return true;
  const sources = Math.max(newest(join(here, 'src')), statSync(join(here, 'index.html')).mtimeMs);
  return statSync(built).mtimeMs < sources;
}

export async function buildDashboard(outdir = DASHBOARD_OUT) {
  mkdirSync(outdir, { recursive: true });
  await build({
    entryPoints: { app: join(here, 'src', 'main.tsx') }, // its CSS import becomes app.css
    outdir,
    bundle: true,
    format: 'esm',
    target: ['chrome120', 'firefox120', 'safari17'],
    jsx: 'automatic',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'warning',
  });
  copyFileSync(join(here, 'index.html'), join(outdir, 'index.html'));
  copyFileSync(join(here, 'icon.svg'), join(outdir, 'icon.svg'));
  return outdir;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--if-stale') && !dashboardStale()) process.exit(0);
  await buildDashboard();
  console.error(`dashboard page built in ${DASHBOARD_OUT}`);
}
