/**
 * What a data dir remembers about the relay that runs on it, for the local operator
 * commands (`grant`, `agent revoke`, `nats reconcile-source-capacity`): `serve` and `dev`
 * record the public URL, listen address, tenants, PostgreSQL ledger file and external NATS they use, so a code minted later names the URL the relay serves,
 * whatever the operator's shell has set. `dev` also keeps its agent id here, so a restart
 * on the same data dir goes on with the same agent.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type DeploymentDocument, fromBase64url, fromUtf8, SvcError } from '@svc/shared';
import { deploymentPaths, hasDeployment } from './deployment.js';

export interface ServedSettings {
  public_url: string;
  /** host:port the relay listens on (unknown for a data dir it has not recorded) */
  listen?: string;
  tenants: string[];
  /**
   * the file naming its PostgreSQL ledger (a path, not the URL inside), so the operator
   * commands find that ledger without being told: on the data dir's SQLite file instead,
   * a grant would never enroll and a revocation would change nothing
   */
  ledger_dsn_file?: string;
  /**
   * the external NATS the relay uses (SVC_RELAY_NATS_URL, user info left out), so that
   * `nats reconcile-source-capacity` finds the bus from the data dir alone; absent for
   * the managed nats-server, whose address is in its config in the data dir
   */
  nats_url?: string;
}

/** A NATS URL list as it may be written down: without the user names and passwords some URLs carry. */
export function natsUrlWithoutUserInfo(urls: string): string {
  return urls
    .split(',')
    .map((u) => u.trim().replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1'))
    .join(',');
}

export const servedSettingsPath = (dataDir: string): string => join(dataDir, 'relay-settings.json');
export const devAgentPath = (dataDir: string): string => join(dataDir, 'dev-agent.json');

function writeJson(path: string, value: unknown): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new SvcError('config_invalid', `cannot read ${path}: ${(err as Error).message}`);
  }
}

/**
 * Refuses a relay on its own nats-server on a data dir whose relays use an external NATS
 * (recorded by one of them): started there, it would record its own URL and re-sign the
 * deployment document with it, so codes minted on the data dir would name it instead of
 * the address the others serve.
 */
export function assertSameBus(dataDir: string, natsUrl: string | undefined): void {
  const path = servedSettingsPath(dataDir);
  if (natsUrl !== undefined || !existsSync(path)) return;
  const recorded = (readJson(path) as Partial<ServedSettings> | null)?.nats_url;
  if (typeof recorded !== 'string') return;
  throw new SvcError(
    'config_invalid',
    `the relays of ${dataDir} use the external NATS at ${recorded} (${path}): set SVC_RELAY_NATS_URL and its operator files to run another of them; to run this data dir on a managed nats-server instead, remove ${path} first`,
  );
}

/** Called by serve and dev once the relay listens. */
export function recordServedSettings(dataDir: string, settings: ServedSettings): void {
  writeJson(servedSettingsPath(dataDir), settings);
}

/**
 * The settings the relay on this data dir uses: those serve/dev recorded, else (a data dir
 * from before they recorded them, or only initialised) the URL and tenants of its signed
 * document. Refuses a data dir without a deployment, and creates nothing.
 */
export function servedSettings(dataDir: string): ServedSettings {
  if (!hasDeployment(dataDir)) {
    throw new SvcError(
      'config_invalid',
      existsSync(dataDir)
        ? `${dataDir} holds no deployment; point --data-dir (or SVC_RELAY_DATA_DIR) at the relay's data dir`
        : `no data dir ${dataDir}; point --data-dir (or SVC_RELAY_DATA_DIR) at the relay's data dir`,
    );
  }
  const recorded = servedSettingsPath(dataDir);
  if (existsSync(recorded)) {
    const s = readJson(recorded) as Partial<ServedSettings>;
    if (typeof s.public_url !== 'string' || !Array.isArray(s.tenants)) {
      throw new SvcError('config_invalid', `${recorded} is incomplete; start the relay once to write it again`);
    }
    return {
      public_url: s.public_url,
      listen: s.listen,
      tenants: s.tenants,
      ...(typeof s.ledger_dsn_file === 'string' ? { ledger_dsn_file: s.ledger_dsn_file } : {}),
      ...(typeof s.nats_url === 'string' ? { nats_url: s.nats_url } : {}),
    };
  }
  const document = deploymentPaths(dataDir).document;
  if (!existsSync(document)) {
    throw new SvcError('config_invalid', `${dataDir} has no signed deployment document yet; start the relay once`);
  }
  const jws = readFileSync(document, 'utf8').trim();
  const doc = JSON.parse(fromUtf8(fromBase64url(jws.split('.')[1] ?? ''))) as DeploymentDocument;
  return { public_url: doc.api_url, tenants: doc.tenants };
}

/** The dev relay's agent id: the one kept in the data dir, else a new one, kept. */
export function devAgentId(dataDir: string): string {
  const path = devAgentPath(dataDir);
  if (existsSync(path)) {
    const id = (readJson(path) as { agent_id?: unknown }).agent_id;
    if (typeof id === 'string' && id !== '') return id;
  }
  const id = `agent-${randomBytes(3).toString('hex')}`;
  writeJson(path, { agent_id: id });
  return id;
}
