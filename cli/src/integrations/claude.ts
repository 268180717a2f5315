/**
 * `svc claude install-statusline | uninstall-statusline` (and the wake-on-mail hook): the
 * assistant's user settings (`$CLAUDE_CONFIG_DIR/settings.json`, else
 * `~/.claude/settings.json`) get an entry that runs svc. What was there before is kept in
 * `$SVC_HOME/integrations/claude-<feature>.json`: the prior value and the file's exact
 * bytes. Uninstall restores those bytes when the file is still what install wrote; when
 * the user changed it since, only svc's entry is taken out (the prior value put back) and
 * their other changes stay. A re-install keeps the record of the first one.
 */
import { rm, rmdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError } from '../errors.js';
import { backup, ensureDir, readIfExists, sha256, shellQuote, writeAtomic } from './files.js';

export type Settings = Record<string, unknown>;

export interface ClaudeTarget {
  settings: string;
  /** the install record */
  state: string;
  svcHome: string;
}

export function claudeTarget(env: NodeJS.ProcessEnv, svcHome: string, feature = 'statusline'): ClaudeTarget {
  const dir = env.CLAUDE_CONFIG_DIR || join(env.HOME || homedir(), '.claude');
  return {
    settings: join(dir, 'settings.json'),
    state: join(svcHome, 'integrations', `claude-${feature}.json`),
    svcHome,
  };
}

/** One thing svc puts in the settings: how to put it in, recognize it and take it out. */
export interface Feature {
  /** what the user calls it in messages */
  label: string;
  /** the value before install (recorded), or undefined when there was none */
  prior(settings: Settings): { had: boolean; value?: unknown };
  apply(settings: Settings, command: string): void;
  isOurs(settings: Settings, command: string): boolean;
  revert(settings: Settings, command: string, prior: { had: boolean; value?: unknown }): void;
}

export const STATUS_LINE: Feature = {
  label: 'status line',
  prior: (s) => (Object.hasOwn(s, 'statusLine') ? { had: true, value: s.statusLine } : { had: false }),
  // assigning keeps the key where it was; a new one goes last
  apply: (s, command) => {
    s.statusLine = { type: 'command', command, padding: 0 };
  },
  isOurs: (s, command) =>
    typeof s.statusLine === 'object' &&
    s.statusLine !== null &&
    (s.statusLine as { command?: unknown }).command === command,
  revert: (s, _command, prior) => {
    if (prior.had) s.statusLine = prior.value;
    else delete s.statusLine;
  },
};

interface InstallRecord {
  settings: string;
  command: string;
  /** the prior statusLine; absent when there was none */
  prior?: unknown;
  had_prior: boolean;
  /** the settings file before the first install, base64; absent when there was no file */
  original?: string;
  /** install created the settings directory */
  created_dir: boolean;
  /** sha256 of the bytes install wrote last */
  written: string;
  /**
   * false once a re-install found the file changed since svc last wrote it (the user, or the
   * other feature): `original` is then no longer the file minus svc's entry, and uninstall
   * takes out only the entry. Absent in records of older versions: true.
   */
  restorable?: boolean;
}

function parseSettings(bytes: Buffer | undefined, path: string): Settings {
  if (bytes === undefined || bytes.toString('utf8').trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new CliError(
      'integration_config_invalid',
      `${path} is not valid JSON (${(err as Error).message}); fix it by hand (nothing was changed), then retry.`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CliError(
      'integration_config_invalid',
      `${path} is not a JSON object; fix it by hand (nothing was changed), then retry.`,
    );
  }
  return value as Settings;
}

/** The indentation the file uses (two spaces when it has none to go by). */
function indentOf(bytes: Buffer | undefined): string | number {
  const m = bytes?.toString('utf8').match(/^[{[]\s*\n([ \t]+)\S/);
  return m ? m[1]! : 2;
}

/**
 * Every version of the settings file seen before an install, while any svc entry is in
 * it: when taking an entry out gives back one of them (the same JSON), its exact bytes are
 * written, so uninstalling in any order still ends byte-identical.
 */
const snapshotsFile = (target: ClaudeTarget) => join(dirname(target.state), 'claude-snapshots.json');
const FEATURES = ['statusline', 'wake'];

async function addSnapshot(target: ClaudeTarget, bytes: Buffer): Promise<void> {
  const file = snapshotsFile(target);
  const saved = await readIfExists(file);
  const list = saved ? (JSON.parse(saved.toString('utf8')) as string[]) : [];
  const b64 = bytes.toString('base64');
  if (!list.includes(b64)) list.push(b64);
  await writeAtomic(file, `${JSON.stringify(list)}\n`);
}

async function matchingSnapshot(target: ClaudeTarget, settings: Settings): Promise<Buffer | undefined> {
  const saved = await readIfExists(snapshotsFile(target));
  const want = JSON.stringify(settings);
  for (const b64 of saved ? (JSON.parse(saved.toString('utf8')) as string[]).reverse() : []) {
    const bytes = Buffer.from(b64, 'base64');
    try {
      if (JSON.stringify(parseSettings(bytes, '')) === want) return bytes;
    } catch {
      // a snapshot that does not parse matches nothing
    }
  }
  return undefined;
}

async function dropSnapshotsIfDone(target: ClaudeTarget): Promise<void> {
  const dir = dirname(target.state);
  for (const f of FEATURES) if (await readIfExists(join(dir, `claude-${f}.json`))) return;
  await rm(snapshotsFile(target), { force: true });
}

const serialize = (settings: Settings, bytes: Buffer | undefined) =>
  `${JSON.stringify(settings, null, indentOf(bytes))}\n`;

async function readRecord(path: string): Promise<InstallRecord | undefined> {
  const bytes = await readIfExists(path);
  return bytes ? (JSON.parse(bytes.toString('utf8')) as InstallRecord) : undefined;
}

export interface InstallResult {
  settings: string;
  command: string;
  /** the prior status line command kept for uninstall, if there was one */
  prior_command?: string;
  backup?: string;
}

/**
 * The status-line script shipped beside the svc launcher: plain sh that prints the line the
 * daemon keeps in $SVC_HOME/run/statusline, in a few ms where any Node start takes 50+.
 */
export const STATUSLINE_SCRIPT = fileURLToPath(new URL('../../bin/svc-statusline', import.meta.url));

/** Runs the script; with `binary`, `<binary> statusline` (a Node process: slower, same line). */
export async function installStatusLine(target: ClaudeTarget, binary?: string): Promise<InstallResult> {
  return install(target, STATUS_LINE, binary ? `${shellQuote(binary)} statusline` : shellQuote(STATUSLINE_SCRIPT));
}

export async function uninstallStatusLine(target: ClaudeTarget): Promise<UninstallResult> {
  return uninstall(target, STATUS_LINE);
}

export async function install(target: ClaudeTarget, feature: Feature, command: string): Promise<InstallResult> {
  const bytes = await readIfExists(target.settings);
  const settings = parseSettings(bytes, target.settings);
  const previous = await readRecord(target.state);
  // already installed here and still ours: a re-install keeps what the first one recorded
  const keep = previous && previous.settings === target.settings && feature.isOurs(settings, previous.command);
  const prior = feature.prior(settings);
  const record: InstallRecord = keep
    ? {
        ...previous,
        command,
        restorable: previous.restorable !== false && bytes !== undefined && sha256(bytes) === previous.written,
      }
    : {
        settings: target.settings,
        command,
        had_prior: prior.had,
        ...(prior.had ? { prior: prior.value } : {}),
        ...(bytes !== undefined ? { original: bytes.toString('base64') } : {}),
        created_dir: false,
        written: '',
      };
  const saved = bytes !== undefined ? await backup(target.svcHome, 'claude-settings.json', bytes) : undefined;
  if (bytes === undefined) record.created_dir = (await ensureDir(dirname(target.settings))) || record.created_dir;
  feature.apply(settings, command);
  const text = serialize(settings, bytes);
  await ensureDir(dirname(target.state));
  record.written = sha256(text);
  // the record first: an interrupted install can still be undone
  await writeAtomic(target.state, `${JSON.stringify(record, null, 2)}\n`);
  if (bytes !== undefined) await addSnapshot(target, bytes);
  await writeAtomic(target.settings, text);
  const kept = record.prior as { command?: unknown } | undefined;
  return {
    settings: target.settings,
    command,
    ...(typeof kept?.command === 'string' ? { prior_command: kept.command } : {}),
    ...(saved ? { backup: saved } : {}),
  };
}

export interface UninstallResult {
  settings: string;
  /** restored: the file as it was before install, byte for byte; reverted: only statusLine put back; kept: the user replaced ours, left alone */
  outcome: 'restored' | 'removed' | 'reverted' | 'kept' | 'gone';
}

export async function uninstall(target: ClaudeTarget, feature: Feature): Promise<UninstallResult> {
  const record = await readRecord(target.state);
  if (!record) {
    throw new CliError(
      'integration_not_installed',
      `The svc ${feature.label} is not installed (no ${target.state}); nothing to remove.`,
    );
  }
  const path = record.settings;
  const bytes = await readIfExists(path);
  let outcome: UninstallResult['outcome'];
  if (bytes === undefined) {
    outcome = 'gone';
  } else if (sha256(bytes) === record.written && record.restorable !== false) {
    // untouched since install: put back exactly what was there
    if (record.original !== undefined) {
      await backup(target.svcHome, 'claude-settings.json', bytes);
      await writeAtomic(path, Buffer.from(record.original, 'base64'));
      outcome = 'restored';
    } else {
      await rm(path);
      if (record.created_dir) await rmdir(dirname(path)).catch(() => undefined); // only if empty
      outcome = 'removed';
    }
  } else {
    const settings = parseSettings(bytes, path);
    if (feature.isOurs(settings, record.command)) {
      await backup(target.svcHome, 'claude-settings.json', bytes);
      feature.revert(settings, record.command, { had: record.had_prior, value: record.prior });
      await writeAtomic(path, (await matchingSnapshot(target, settings)) ?? serialize(settings, bytes));
      outcome = 'reverted';
    } else {
      outcome = 'kept';
    }
  }
  await rm(target.state, { force: true });
  await dropSnapshotsIfDone(target);
  return { settings: path, outcome };
}

/** The group svc adds to `hooks.Stop`. */
const wakeGroup = (command: string) => ({ hooks: [{ type: 'command', command, timeout: 5 }] });
type HookGroup = { hooks?: Array<{ command?: unknown }> };
const stopGroups = (s: Settings): HookGroup[] | undefined => {
  const hooks = s.hooks as Record<string, unknown> | undefined;
  return hooks && Array.isArray(hooks.Stop) ? (hooks.Stop as HookGroup[]) : undefined;
};
const isWakeGroup = (g: HookGroup, command: string) =>
  Array.isArray(g?.hooks) && g.hooks.some((h) => h?.command === command);

/**
 * Wake-on-mail: a `Stop` hook. When the assistant is about to go idle, `svc wake-hook`
 * tells it (once per new message, with backoff) that mail arrived, so it reads it.
 */
export const WAKE_HOOK: Feature = {
  label: 'wake-on-mail hook',
  prior: (s) => ({
    had: true,
    value: { hooks: Object.hasOwn(s, 'hooks'), stop: stopGroups(s) !== undefined },
  }),
  apply: (s, command) => {
    if (typeof s.hooks !== 'object' || s.hooks === null) s.hooks = {};
    const hooks = s.hooks as Record<string, unknown>;
    const groups = stopGroups(s) ?? [];
    if (!groups.some((g) => isWakeGroup(g, command))) groups.push(wakeGroup(command));
    hooks.Stop = groups;
  },
  isOurs: (s, command) => (stopGroups(s) ?? []).some((g) => isWakeGroup(g, command)),
  revert: (s, command, prior) => {
    const had = (prior.value ?? {}) as { hooks?: boolean; stop?: boolean };
    const groups = (stopGroups(s) ?? []).filter((g) => !isWakeGroup(g, command));
    const hooks = s.hooks as Record<string, unknown>;
    if (groups.length > 0 || had.stop) hooks.Stop = groups;
    else delete hooks.Stop;
    if (Object.keys(hooks).length === 0 && !had.hooks) delete s.hooks;
  },
};
