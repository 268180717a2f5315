/**
 * Step one of configuration: collect raw settings. Only the entry point calls these
 * with process.env / the config file / flags; everything else receives RelayConfig.
 */
import { readFileSync } from 'node:fs';
import { SvcError } from '@svc/shared';
import { nearestName } from './nearest-name.js';

/** Setting names (part of the product; see docs/operators.md). */
export const SETTINGS = [
  'SVC_RELAY_LISTEN',
  'SVC_RELAY_PUBLIC_URL',
  'SVC_RELAY_DATA_DIR',
  'SVC_RELAY_DEPLOYMENT_ID',
  'SVC_RELAY_TENANTS',
  'SVC_RELAY_LEDGER_DSN_FILE',
  'SVC_RELAY_NATS_URL',
  'SVC_RELAY_NATS_SERVER_BIN',
  'SVC_RELAY_NATS_OPERATOR_SEED_FILE',
  'SVC_RELAY_NATS_SYSTEM_CREDS_FILE',
  // scale-out: JetStream replicas of each tenant stream (docs/scale-out.md)
  'SVC_RELAY_STREAM_REPLICAS',
  'SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER',
  'SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE',
  'SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID',
  'SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL',
  'SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE',
  'SVC_RELAY_IDENTITY_BROKER_ENDPOINT',
  'SVC_RELAY_IDENTITY_BROKER_ADMIN_ENDPOINT',
  'SVC_RELAY_IDENTITY_BROKER_CA_FILE',
  'SVC_RELAY_IDENTITY_BROKER_CLIENT_ID',
  'SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS',
  'SVC_RELAY_WEBHOOK_CA_FILE',
  'SVC_RELAY_API_KEY_TTL_SECONDS',
  'SVC_RELAY_LOG_LEVEL',
  'SVC_RELAY_TRUSTED_PROXIES',
  // rate limits and quotas (0 = no limit; see docs/operators.md)
  'SVC_RELAY_AUTH_RATE_PER_ADDRESS',
  'SVC_RELAY_AUTH_RATE_PER_AGENT',
  // retired (RETIRED_SETTINGS): still known, so a configuration that sets them starts
  'SVC_RELAY_CHALLENGES_PER_AGENT',
  'SVC_RELAY_CHALLENGES_MAX',
  'SVC_RELAY_SEND_RATE_PER_AGENT',
  'SVC_RELAY_SEND_BURST_PER_AGENT',
  'SVC_RELAY_RECIPIENT_MAX_PENDING',
  'SVC_RELAY_RECIPIENT_MAX_PENDING_BYTES',
  'SVC_RELAY_TENANT_MAX_MESSAGES',
  'SVC_RELAY_TENANT_MAX_BYTES',
  'SVC_RELAY_STREAMS_PER_AGENT',
  // attachments (encrypted blobs): the largest one, each tenant's blob store, one agent's share of it
  'SVC_RELAY_BLOB_MAX_BYTES',
  'SVC_RELAY_TENANT_MAX_BLOB_BYTES',
  'SVC_RELAY_AGENT_MAX_BLOB_BYTES',
  // the local stack: leaf uplinks and named sources (see docs/local-stack.md)
  'SVC_RELAY_LEAF_LISTEN',
  'SVC_RELAY_LEAF_ADVERTISE',
  'SVC_RELAY_LEAF_CREDS_TTL_SECONDS',
  'SVC_RELAY_SOURCES_PER_TENANT',
  'SVC_RELAY_SOURCES_PER_EDGE',
  'SVC_RELAY_TENANT_MAX_CONSUMERS',
] as const;
export type SettingName = (typeof SETTINGS)[number];
export type RawSettings = Partial<Record<SettingName, string>>;

/**
 * Settings this relay no longer reads: sign-in challenges are no longer stored (so there
 * is no table to bound). Set, they are named in a warning at start and change nothing.
 */
export const RETIRED_SETTINGS: SettingName[] = ['SVC_RELAY_CHALLENGES_PER_AGENT', 'SVC_RELAY_CHALLENGES_MAX'];

/** Every setting's name starts with this. */
export const SETTING_PREFIX = 'SVC_RELAY_';

const isSetting = (name: string): name is SettingName => (SETTINGS as readonly string[]).includes(name);

/** " (did you mean X?)" naming the setting `name` was most likely meant to be, as `spell` writes it; else "". */
function didYouMean(name: string, spell: (setting: SettingName) => string = (setting) => setting): string {
  const near = nearestName(name, SETTINGS, SETTING_PREFIX);
  return near === undefined ? '' : ` (did you mean ${spell(near)}?)`;
}

/**
 * The relay's settings from the environment. A variable under the prefix (in any case)
 * that names no setting is refused, naming it and the setting it is nearest to: a
 * misspelled setting would otherwise be ignored while the operator believes it set. A
 * setting set to the empty string is refused too, naming it.
 */
export function settingsFromEnv(env: NodeJS.ProcessEnv): RawSettings {
  const unknown = Object.keys(env)
    .filter((name) => name.toUpperCase().startsWith(SETTING_PREFIX) && !isSetting(name))
    .sort();
  if (unknown.length > 0) {
    const one = unknown.length === 1;
    throw new SvcError(
      'config_invalid',
      `unknown setting${one ? '' : 's'} in the environment: ${unknown.map((name) => `${name}${didYouMean(name)}`).join(', ')}; ` +
        `rename or unset ${one ? 'it' : 'them'} (the settings are listed in docs/operators.md)`,
    );
  }
  // an empty value is most often an unset shell variable expanded (X=$UNSET): taken as
  // "not set", SVC_RELAY_LEDGER_DSN_FILE= would quietly run the relay on SQLite
  const empty = SETTINGS.filter((name) => env[name] === '');
  if (empty.length > 0) throw emptySettings(empty);
  const out: RawSettings = {};
  for (const name of SETTINGS) {
    const v = env[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}

function emptySettings(names: readonly string[]): SvcError {
  return new SvcError(
    'config_invalid',
    names.length === 1
      ? `${names[0]} is set but empty: unset it for the default, or give a value`
      : `${names.join(', ')} are set but empty: unset them for the defaults, or give values`,
  );
}

/** A JSON config file holds the same keys in lower case (e.g. "svc_relay_listen"). */
export function settingsFromFile(path: string): RawSettings {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new SvcError('config_invalid', `cannot read config file ${path}: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new SvcError('config_invalid', `config file ${path} must hold a JSON object`);
  }
  const out: RawSettings = {};
  for (const [key, value] of Object.entries(parsed)) {
    const name = key.toUpperCase();
    if (!isSetting(name)) {
      const hint = didYouMean(key, (setting) => `"${setting.toLowerCase()}"`);
      throw new SvcError('config_invalid', `config file ${path}: unknown setting "${key}"${hint}`);
    }
    if (value === null || value === undefined) continue;
    if (value === '') {
      throw new SvcError(
        'config_invalid',
        `config file ${path}: "${key}" is set but empty: remove it for the default, or give a value`,
      );
    }
    out[name] = Array.isArray(value) ? value.join(',') : String(value);
  }
  return out;
}

/** Later sources override earlier ones: environment, then config file, then flags. */
export function mergeSettings(...sources: RawSettings[]): RawSettings {
  return Object.assign({}, ...sources);
}
