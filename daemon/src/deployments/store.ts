/**
 * Trusted deployments: $SVC_HOME/deployments/<name>.json holds the signed document (JWS
 * text), the trust bundle it was verified against, an optional CA bundle and the URL it
 * came from. A document enters the store only after verifyDeploymentDocument accepted it.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  type DeploymentDocument,
  DeploymentTrustError,
  fromBase64url,
  fromUtf8,
  parseTrustBundle,
  type TrustBundle,
  verifyDeploymentDocument,
} from '@svc/shared';
import { LOCAL_DEPLOYMENT } from '../agents/local-agent.js';
import type { DeploymentAudit, DeploymentInfo } from '../client/api.js';
import { DaemonError } from '../errors.js';
import { isLocalName } from '../paths.js';

export interface StoredDeployment {
  name: string;
  url: string | null;
  document: string;
  trust_bundle: TrustBundle;
  ca_bundle: string | null;
  fetched_at: string;
}

/** A trusted deployment, decoded. */
export interface Deployment extends StoredDeployment {
  doc: DeploymentDocument;
}

/** Trust errors keep their shared codes (deployment_untrusted / _mismatch / _expired / _malformed). */
export function trustError(err: unknown): never {
  if (err instanceof DeploymentTrustError) throw new DaemonError(err.code, err.message, { cause: err });
  throw err;
}

export function parseBundleText(text: string): TrustBundle {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DaemonError('deployment_malformed', 'the trust bundle is not JSON');
  }
  let bundle: TrustBundle;
  try {
    bundle = parseTrustBundle(value);
  } catch (err) {
    trustError(err);
  }
  // the offline agents' pseudo-deployment: a relay's deployment under that id would be taken
  // for this machine's own agents (local delivery matches on deployment and tenant)
  if (bundle.deployment_id === LOCAL_DEPLOYMENT) {
    throw new DaemonError(
      'deployment_malformed',
      `the deployment id "${LOCAL_DEPLOYMENT}" is reserved for this machine's offline agents (svc register --local); no relay may use it`,
    );
  }
  return bundle;
}

export async function verifyDocument(
  jws: string,
  bundle: TrustBundle,
  opts: { expectedDeploymentId?: string; now?: Date } = {},
): Promise<DeploymentDocument> {
  try {
    return await verifyDeploymentDocument(jws, bundle, opts);
  } catch (err) {
    trustError(err);
  }
}

/** The payload of an already-verified JWS (read back from our own store). */
function decodeDocument(jws: string): DeploymentDocument {
  return JSON.parse(fromUtf8(fromBase64url(jws.split('.')[1] as string))) as DeploymentDocument;
}

export function deploymentInfo(d: Deployment): DeploymentInfo {
  return {
    name: d.name,
    deployment_id: d.doc.deployment_id,
    api_url: d.doc.api_url,
    tenants: d.doc.tenants,
    relay_key_ids: d.doc.relay_keys.map((k) => k.kid),
    issued_at: d.doc.issued_at,
    expires_at: d.doc.expires_at,
    fetched_at: d.fetched_at,
  };
}

export class DeploymentStore {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  #file(name: string): string {
    if (!isLocalName(name)) throw new DaemonError('validation_failed', `invalid deployment name ${name}`);
    return join(this.#dir, `${name}.json`);
  }

  has(name: string): boolean {
    return existsSync(this.#file(name));
  }

  get(name: string): Deployment {
    const file = this.#file(name);
    if (!existsSync(file)) throw new DaemonError('unknown_deployment', `No trusted deployment named ${name}.`);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as StoredDeployment;
    return { ...stored, doc: decodeDocument(stored.document) };
  }

  list(): Deployment[] {
    return readdirSync(this.#dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => this.get(f.slice(0, -'.json'.length)))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The deployment whose id is `deploymentId` (the one an enrollment code names). */
  byDeploymentId(deploymentId: string): Deployment | undefined {
    return this.list().find((d) => d.doc.deployment_id === deploymentId);
  }

  save(d: StoredDeployment): Deployment {
    const file = this.#file(d.name);
    const tmp = `${file}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(d, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
    return this.get(d.name);
  }

  remove(name: string): void {
    const file = this.#file(name);
    if (!existsSync(file)) throw new DaemonError('unknown_deployment', `No trusted deployment named ${name}.`);
    rmSync(file);
  }
}

/** Re-verifies a stored deployment and reports what needs attention. */
export async function auditDeployment(d: Deployment, now = new Date(), soonDays = 14): Promise<DeploymentAudit> {
  const problems: string[] = [];
  try {
    await verifyDeploymentDocument(d.document, d.trust_bundle, { now });
  } catch (err) {
    problems.push(`${(err as DeploymentTrustError).code ?? 'error'}: ${(err as Error).message}`);
  }
  const left = Date.parse(d.doc.expires_at) - now.getTime();
  if (left > 0 && left < soonDays * 86_400_000) {
    problems.push(`expires soon: ${d.doc.expires_at}; run \`svc deployment renew ${d.name}\``);
  }
  if (!d.doc.relay_keys.some((k) => k.use.includes('enrollment-code'))) {
    problems.push('the document lists no relay key for enrollment codes');
  }
  if (!d.doc.relay_keys.some((k) => k.use.includes('access-token'))) {
    problems.push('the document lists no relay key for access tokens');
  }
  if (!/^https:\/\//.test(d.doc.api_url) && !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:|\/|$)/.test(d.doc.api_url)) {
    problems.push(`the API URL ${d.doc.api_url} is not https`);
  }
  return { name: d.name, deployment_id: d.doc.deployment_id, ok: problems.length === 0, problems };
}
