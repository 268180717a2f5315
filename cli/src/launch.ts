/**
 * Opening the dashboard: the default browser for `svc dashboard`, and for `svc desktop`
 * the Electron shell where one is installed, else a Chromium app window (`--app=URL`, its
 * own profile under $SVC_HOME). Plans are pure functions; `start` spawns detached.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface LaunchPlan {
  mode: 'browser' | 'electron' | 'chromium';
  command: string;
  args: string[];
  env?: Record<string, string>;
  /** the Chromium profile directory (chromium mode) */
  profile?: string;
}

/**
 * The one-time link, handed to a browser as a file only this user can read, which sends it
 * on at once: a command line is readable by every local user (/proc/<pid>/cmdline), and the
 * token in it could be redeemed by another before the browser does. Returns the file's URL.
 */
export function launchFile(url: string, dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'dashboard-launch.html');
  const attr = url.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  const html =
    '<!doctype html><meta charset="utf-8"><title>svc dashboard</title>' +
    `<meta http-equiv="refresh" content="0;url=${attr}"><a href="${attr}">Open the svc dashboard</a>\n`;
  // written whole to a new file at 0600 (a leftover temporary file keeps its own mode, so it
  // goes first), then renamed over any earlier one (whatever its mode)
  rmSync(`${file}.tmp`, { force: true });
  writeFileSync(`${file}.tmp`, html, { mode: 0o600, flag: 'wx' });
  renameSync(`${file}.tmp`, file);
  return pathToFileURL(file).href;
}

/**
 * A command line of SVC_BROWSER as words: `flatpak run org.chromium.Chromium`, `"/opt/My
 * Browser/browser" --new-window`. A path to a file that exists is one word, spaces and all.
 * No shell runs it: quotes group, nothing else is special.
 */
export function commandWords(value: string): string[] {
  if (existsSync(value)) return [value];
  const words: string[] = [];
  for (const m of value.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) words.push(m[1] ?? m[2] ?? m[3] ?? '');
  return words;
}

/** The platform's "open this URL" command; SVC_BROWSER (a command, with its arguments) wins. */
export function browserPlan(url: string, env: NodeJS.ProcessEnv, platform = process.platform): LaunchPlan {
  const custom = env.SVC_BROWSER ? commandWords(env.SVC_BROWSER.trim()) : [];
  if (custom.length > 0) return { mode: 'browser', command: custom[0] as string, args: [...custom.slice(1), url] };
  if (platform === 'darwin') return { mode: 'browser', command: 'open', args: [url] };
  if (platform === 'win32') return { mode: 'browser', command: 'cmd', args: ['/c', 'start', '""', url] };
  return { mode: 'browser', command: 'xdg-open', args: [url] };
}

/** Chromium-family browsers that take --app, in order of preference. */
export const CHROMIUM_NAMES = [
  'chromium',
  'chromium-browser',
  'google-chrome',
  'google-chrome-stable',
  'microsoft-edge',
];

/** The first executable of these names on PATH. */
export function findOnPath(names: readonly string[], path = ''): string | undefined {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    for (const name of names) {
      const file = join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return file;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/**
 * Why `program` cannot be started, if it cannot: checked before spawning because spawn's
 * own error for a missing file depends on the platform (EACCES rather than ENOENT, on some).
 */
export function unstartable(program: string, path = ''): string | undefined {
  if (!/[\\/]/.test(program)) return findOnPath([program], path) ? undefined : 'not found on PATH';
  const st = statSync(program, { throwIfNoEntry: false });
  if (!st) return 'no such file';
  if (!st.isFile()) return 'not a file';
  try {
    accessSync(program, constants.X_OK);
    return undefined;
  } catch {
    return 'not executable';
  }
}

/** A Chromium app window: no tabs or address bar, its own profile so it never touches the user's. */
export function chromiumPlan(url: string, browser: string, profile: string, extraFlags = ''): LaunchPlan {
  return {
    mode: 'chromium',
    command: browser,
    args: [
      `--app=${url}`,
      `--user-data-dir=${profile}`,
      '--no-first-run',
      '--no-default-browser-check',
      '--class=svc-desktop',
      '--window-size=1280,820',
      ...extraFlags.split(/\s+/).filter(Boolean),
    ],
    profile,
  };
}

/** The desktop shell's main script (desktop/dist/main.js), when built. */
export const DESKTOP_MAIN = fileURLToPath(new URL('../../desktop/dist/main.js', import.meta.url));

/** The Electron binary, when the `electron` package is installed with its binary (it throws without). */
export function electronBinary(env: NodeJS.ProcessEnv): string | undefined {
  if (env.SVC_ELECTRON) return existsSync(env.SVC_ELECTRON) ? env.SVC_ELECTRON : undefined;
  try {
    const path = createRequire(import.meta.url)('electron') as unknown;
    return typeof path === 'string' && existsSync(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

/** Starts a plan detached (it outlives the CLI); resolves once it is running, rejects when it cannot start. */
export function start(plan: LaunchPlan, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(plan.command, plan.args, {
      detached: true,
      stdio: 'ignore',
      env: { ...env, ...plan.env },
    });
    child.once('error', reject);
    child.once('spawn', () => {
      child.unref();
      resolve(child);
    });
  });
}

/**
 * `start`, then a moment's watch: a window program that exits at once with an error (no
 * display, a broken install) is reported instead of being said to have opened. One that
 * exits 0 has handed over to a running instance.
 */
export async function startWatched(plan: LaunchPlan, env: NodeJS.ProcessEnv, watchMs = 1000): Promise<ChildProcess> {
  const child = await start(plan, env);
  // watched with the event loop held: start() unref'd the child, and a CLI with nothing else
  // to do would exit during the watch without saying anything
  child.ref();
  const exited = await new Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), watchMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
  child.unref();
  if (exited && exited.code !== 0) {
    throw new Error(`it exited at once (${exited.signal ?? `code ${exited.code}`}): no display, or a broken install`);
  }
  return child;
}
