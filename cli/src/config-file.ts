/**
 * `$SVC_HOME/config.json`: named profiles of string settings, read and written by
 * `svc config` without the daemon. Written atomically with mode 0600 (it may hold an API key).
 */
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CliError } from './errors.js';

export const DEFAULT_PROFILE = 'default';

/** The keys `svc config set` accepts, with what they mean. */
export const CONFIG_KEYS = {
  'api-url': 'relay base URL: the default of whoami --api-url and doctor --api-url',
  'api-key': 'agent API key (svc_ak_…), the default of whoami --api-key; secret, masked by `config list`',
  deployment: 'default deployment name for init and register',
  name: 'default agent name for register (set by init)',
  description: 'default agent description for register (set by init)',
} as const;
export type ConfigKey = keyof typeof CONFIG_KEYS;
const SECRET_KEYS: ReadonlySet<string> = new Set(['api-key']);

export interface ConfigFile {
  profiles: Record<string, Record<string, string>>;
}

export function configPath(home: string): string {
  return join(home, 'config.json');
}

export function isConfigKey(key: string): key is ConfigKey {
  return Object.hasOwn(CONFIG_KEYS, key);
}

export function checkConfigKey(key: string): ConfigKey {
  if (!isConfigKey(key)) {
    // a word the user typed, not a damaged file (config_invalid): a usage error
    throw new CliError(
      'usage_error',
      `Unknown configuration key ${JSON.stringify(key)}; known keys: ${Object.keys(CONFIG_KEYS).join(', ')}.`,
      { exitCode: 2 },
    );
  }
  return key;
}

export function checkProfileName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name)) {
    throw new CliError(
      'usage_error',
      `Invalid profile name ${JSON.stringify(name)}; use letters, digits, '.', '_' or '-' (at most 64).`,
      { exitCode: 2 },
    );
  }
  return name;
}

export async function readConfig(home: string): Promise<ConfigFile> {
  const path = configPath(home);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { profiles: {} };
    throw err;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError('config_invalid', `${path} is not valid JSON; fix or remove it.`);
  }
  const profiles = (parsed as { profiles?: unknown } | null)?.profiles ?? {};
  if (typeof profiles !== 'object' || profiles === null || Array.isArray(profiles)) {
    throw new CliError('config_invalid', `${path}: "profiles" must be an object of profiles.`);
  }
  const out: ConfigFile = { profiles: {} };
  for (const [name, values] of Object.entries(profiles)) {
    if (typeof values !== 'object' || values === null || Array.isArray(values)) {
      throw new CliError('config_invalid', `${path}: profile ${JSON.stringify(name)} must be an object.`);
    }
    out.profiles[name] = Object.fromEntries(
      Object.entries(values).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  }
  return out;
}

export async function writeConfig(home: string, config: ConfigFile): Promise<void> {
  const path = configPath(home);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}

export async function getSetting(home: string, profile: string, key: ConfigKey): Promise<string | undefined> {
  return (await readConfig(home)).profiles[profile]?.[key];
}

/** Why `value` cannot be stored under `key` (so that a later command does not fail on it), or undefined. */
export function settingProblem(key: ConfigKey, value: string): string | undefined {
  if (value.trim() === '') return `${key} cannot be empty.`;
  if (key === 'api-url') {
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      return `api-url must be an http(s) URL such as https://relay.example.com, not ${JSON.stringify(value)}.`;
    }
  }
  return undefined;
}

export async function setSetting(home: string, profile: string, key: ConfigKey, value: string): Promise<void> {
  const problem = settingProblem(key, value);
  if (problem) throw new CliError('usage_error', problem, { exitCode: 2 });
  const config = await readConfig(home);
  config.profiles[profile] = { ...config.profiles[profile], [key]: value };
  await writeConfig(home, config);
}

/** A value fit for display: secrets keep only their last four characters. */
export function maskSetting(key: string, value: string): string {
  if (!SECRET_KEYS.has(key)) return value;
  return value.length <= 8 ? '****' : `****${value.slice(-4)}`;
}
