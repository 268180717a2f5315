/**
 * `svc claude install-statusline | uninstall-statusline`: the assistant's user settings
 * (`$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`) get a `statusLine`
 * that runs `svc statusline`. What was there before is kept in
 * `$SVC_HOME/integrations/claude-statusline.json`: the prior `statusLine` and the file's
 * exact bytes. Uninstall restores those bytes when the file is still what install wrote;
 * when the user changed it since, only `statusLine` goes back to the prior value and their
 * other changes stay. A re-install keeps the record of the first one.
 */
import { rm, rmdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError } from '../errors.js';
import { backup, ensureDir, readIfExists, sha256, shellQuote, writeAtomic } from './files.js';

export interface ClaudeTarget {
  settings: string;
  /** the install record */
  state: string;
  svcHome: string;
}

export function claudeTarget(env: NodeJS.ProcessEnv, svcHome: string): ClaudeTarget {
  const dir = env.CLAUDE_CONFIG_DIR || join(env.HOME || homedir(), '.claude');
  return {
    settings: join(dir, 'settings.json'),
    state: join(svcHome, 'integrations', 'claude-statusline.json'),
    svcHome,
  };
}

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
}

type Settings = Record<string, unknown>;

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

const serialize = (settings: Settings, bytes: Buffer | undefined) =>
  `${JSON.stringify(settings, null, indentOf(bytes))}\n`;

async function readRecord(path: string): Promise<InstallRecord | undefined> {
  const bytes = await readIfExists(path);
  return bytes ? (JSON.parse(bytes.toString('utf8')) as InstallRecord) : undefined;
}

const isOurs = (statusLine: unknown, record: InstallRecord) =>
  typeof statusLine === 'object' &&
  statusLine !== null &&
  (statusLine as { command?: unknown }).command === record.command;

export interface InstallResult {
  settings: string;
  command: string;
  /** the prior status line command kept for uninstall, if there was one */
  prior_command?: string;
  backup?: string;
}

export async function installStatusLine(target: ClaudeTarget, binary: string): Promise<InstallResult> {
  const command = `${shellQuote(binary)} statusline`;
  const bytes = await readIfExists(target.settings);
  const settings = parseSettings(bytes, target.settings);
  const previous = await readRecord(target.state);
  // already installed here and still ours: a re-install keeps what the first one recorded
  const keep = previous && previous.settings === target.settings && isOurs(settings.statusLine, previous);
  const record: InstallRecord = keep
    ? { ...previous, command }
    : {
        settings: target.settings,
        command,
        had_prior: Object.hasOwn(settings, 'statusLine'),
        ...(Object.hasOwn(settings, 'statusLine') ? { prior: settings.statusLine } : {}),
        ...(bytes !== undefined ? { original: bytes.toString('base64') } : {}),
        created_dir: false,
        written: '',
      };
  const saved = bytes !== undefined ? await backup(target.svcHome, 'claude-settings.json', bytes) : undefined;
  if (bytes === undefined) record.created_dir = (await ensureDir(dirname(target.settings))) || record.created_dir;
  // assigning keeps the key where it was; a new one goes last
  settings.statusLine = { type: 'command', command, padding: 0 };
  const text = serialize(settings, bytes);
  await ensureDir(dirname(target.state));
  record.written = sha256(text);
  // the record first: an interrupted install can still be undone
  await writeAtomic(target.state, `${JSON.stringify(record, null, 2)}\n`);
  await writeAtomic(target.settings, text);
  const prior = record.prior as { command?: unknown } | undefined;
  return {
    settings: target.settings,
    command,
    ...(typeof prior?.command === 'string' ? { prior_command: prior.command } : {}),
    ...(saved ? { backup: saved } : {}),
  };
}

export interface UninstallResult {
  settings: string;
  /** restored: the file as it was before install, byte for byte; reverted: only statusLine put back; kept: the user replaced ours, left alone */
  outcome: 'restored' | 'removed' | 'reverted' | 'kept' | 'gone';
}

export async function uninstallStatusLine(target: ClaudeTarget): Promise<UninstallResult> {
  const record = await readRecord(target.state);
  if (!record) {
    throw new CliError(
      'integration_not_installed',
      `The svc status line is not installed (no ${target.state}); nothing to remove.`,
    );
  }
  const path = record.settings;
  const bytes = await readIfExists(path);
  let outcome: UninstallResult['outcome'];
  if (bytes === undefined) {
    outcome = 'gone';
  } else if (sha256(bytes) === record.written) {
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
    if (isOurs(settings.statusLine, record)) {
      await backup(target.svcHome, 'claude-settings.json', bytes);
      if (record.had_prior) settings.statusLine = record.prior;
      else delete settings.statusLine;
      await writeAtomic(path, serialize(settings, bytes));
      outcome = 'reverted';
    } else {
      outcome = 'kept';
    }
  }
  await rm(target.state, { force: true });
  return { settings: path, outcome };
}
