/**
 * Where a daemon lives: `$SVC_HOME` (trimmed; blank counts as unset), else ~/.svc, and
 * its socket under it. The daemon, its client, the CLI and the desktop app all resolve
 * the home here, so they never disagree about a blank or relative value.
 */
import { existsSync, statfsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

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

/**
 * Linux file systems that are the kernel's views, not storage (statfs `f_type`). Creating
 * directories there fails, or under /proc never ends: Node's recursive mkdirSync loops
 * forever on procfs's ENOENT, so `SVC_HOME=/proc/x` hung every command.
 */
const VIRTUAL_FILE_SYSTEMS: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0x1cd1, 'devpts'],
  [0xcafe4a11, 'bpf'],
  [0x6165676c, 'pstore'],
  [0x62656570, 'configfs'],
  [0xde5e81e4, 'efivarfs'],
]);

/**
 * Why `home` cannot be an svc home, or undefined when it can be used: checked before
 * anything is created under it. The nearest existing directory of the path (the home
 * itself, else its closest ancestor) must not be on a virtual file system such as /proc or
 * /sys. Other problems (permissions, a file in the way) are left to the file operations,
 * which report them.
 */
export function homeProblem(home: string): string | undefined {
  if (process.platform !== 'linux') return undefined;
  let existing = resolve(home);
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing);
  let type: number;
  try {
    type = statfsSync(existing).type;
  } catch {
    return undefined;
  }
  const fs = VIRTUAL_FILE_SYSTEMS.get(type);
  if (fs === undefined) return undefined;
  return `SVC_HOME ${home} lies on a ${fs} file system (${existing}), the kernel's view and not storage, where svc cannot keep its files: set SVC_HOME to a directory on a disk, or unset it for ~/.svc.`;
}
