/**
 * How to name `svc` and `svc-relay` in a printed hint so it runs as printed, from any
 * directory: the bare name when that name on PATH is this checkout's command, else the
 * absolute path of the checkout's entry file.
 */
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** relay/src/bin or relay/dist/bin → the checkout */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const ENTRIES = { svc: join(ROOT, 'cli', 'bin', 'svc.cjs'), 'svc-relay': join(ROOT, 'relay', 'bin', 'svc-relay.js') };

function realpath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The first executable `name` on PATH, resolved through its links. `npm start` and `npx`
 * put node_modules/.bin on the PATH of what they run, not on the user's: skipped.
 */
function onPath(name: string, path: string): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir || /[\\/]node_modules[\\/]\.bin[\\/]?$/.test(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    return realpath(candidate);
  }
  return undefined;
}

/** Quotes a word for a POSIX shell when it needs it. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

export function commandFor(name: keyof typeof ENTRIES, path = process.env.PATH ?? ''): string {
  const entry = ENTRIES[name];
  const mine = realpath(entry);
  return mine !== undefined && onPath(name, path) === mine ? name : shellQuote(entry);
}
