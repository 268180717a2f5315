/**
 * Where a daemon lives: `$SVC_HOME` (trimmed; blank counts as unset), else ~/.svc, and
 * its socket under it. The daemon, its client, the CLI and the desktop app all resolve
 * the home here, so they never disagree about a blank or relative value.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** The absolute home for a `SVC_HOME` value (undefined or blank: ~/.svc). */
export function homeFrom(value: string | undefined): string {
  const home = value?.trim();
  return home ? resolve(home) : join(homedir(), '.svc');
}

/** $SVC_HOME of `env`, else ~/.svc. */
export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  return homeFrom(env.SVC_HOME);
}

export function socketPathFor(home: string): string {
  return join(home, 'run', 'daemon.sock');
}
