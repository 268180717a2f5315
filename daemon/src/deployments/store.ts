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
  DOCUMENT_STEPS,
  explainDeploymentDocument,
  fromBase64url,
  fromUtf8,
  parseTrustBundle,
  type TrustBundle,
  verifyDeploymentDocument,
} from '@svc/shared';
import { LOCAL_DEPLOYMENT } from '../agents/local-agent.js';
import type { DeploymentAudit, DeploymentCheck, DeploymentDiagnosis, DeploymentInfo } from '../client/api.js';
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

/**
 * The payload of a JWS, unverified: one read back from our own store (verified when it was
 * stored), or a relay's whose claimed id only picks the bundle to verify it with. Throws
 * on a payload that is not JSON.
 */
export function decodeDocument(jws: string): DeploymentDocument {
  return JSON.parse(fromUtf8(fromBase64url(jws.split('.')[1] as string))) as DeploymentDocument;
}

/** A relay address a client may use: https, or plain http on this machine's loopback. */
export function isHttpsOrLoopback(url: string): boolean {
  return /^https:\/\//.test(url) || /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:|\/|$)/.test(url);
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

/** Re-verifies a stored deployment and reports what needs attention: its diagnosis's failures and warnings. */
export async function auditDeployment(d: Deployment, now = new Date()): Promise<DeploymentAudit> {
  const { name, deployment_id, checks } = await diagnoseDeployment(d, now);
  const problems = checks.filter((c) => c.status === 'fail' || c.status === 'warn').map((c) => c.detail);
  return { name, deployment_id, ok: problems.length === 0, problems };
}

/** A document renewed less than this long before it expires is one to renew now. */
const RENEW_WITHIN_DAYS = 14;
const DAY_MS = 86_400_000;

/**
 * Every check of a trusted deployment at a time: the steps of verifying its document
 * against its trust bundle (one path with the verification itself, so the two agree), then
 * what this daemon needs of the document (relay keys for both uses, an https API URL) and
 * whether it is due for renewal. Checks after a failed step, or of content whose signature
 * did not verify, are `skipped`.
 */
export async function diagnoseDeployment(d: Deployment, at: Date): Promise<DeploymentDiagnosis> {
  const checks: DeploymentCheck[] = [];
  const bundle = d.trust_bundle;
  checks.push({
    check: 'trust_bundle',
    status: 'ok',
    detail: `${bundle.signer_keys.length} signer key${bundle.signer_keys.length === 1 ? '' : 's'} (${bundle.signer_keys.map((k) => k.kid).join(', ')}) for deployment ${bundle.deployment_id}`,
  });
  const verification = await explainDeploymentDocument(d.document, bundle, { now: at });
  const skipped = (check: string, why: string): DeploymentCheck => ({
    check,
    status: 'skipped',
    detail: `not checked: ${why}`,
  });
  for (const step of DOCUMENT_STEPS) {
    const passed = verification.passed.find((p) => p.step === step);
    if (passed) checks.push({ check: step, status: 'ok', detail: passed.detail });
    else if (verification.failed?.step === step) {
      const { code, message } = verification.failed.error;
      checks.push({ check: step, status: 'fail', detail: `${code}: ${message}` });
    } else checks.push(skipped(step, `the ${verification.failed?.step} check failed`));
  }
  const doc = verification.doc;
  if (!doc) {
    const why = "the document is not the signer's";
    checks.push(
      skipped('renewal', why),
      skipped('enrollment_key', why),
      skipped('access_key', why),
      skipped('api_url', why),
    );
  } else {
    const left = Date.parse(doc.expires_at) - at.getTime();
    if (left <= 0) checks.push(skipped('renewal', 'the document has expired'));
    else if (left < RENEW_WITHIN_DAYS * DAY_MS) {
      checks.push({
        check: 'renewal',
        status: 'warn',
        detail: `expires soon: ${doc.expires_at}; run \`svc deployment renew ${d.name}\``,
      });
    } else {
      checks.push({ check: 'renewal', status: 'ok', detail: `${Math.floor(left / DAY_MS)} days before it expires` });
    }
    const keys = (use: 'enrollment-code' | 'access-token') =>
      doc.relay_keys.filter((k) => k.use?.includes(use)).map((k) => k.kid);
    const enrollment = keys('enrollment-code');
    checks.push(
      enrollment.length > 0
        ? { check: 'enrollment_key', status: 'ok', detail: `relay key for enrollment codes: ${enrollment.join(', ')}` }
        : { check: 'enrollment_key', status: 'fail', detail: 'the document lists no relay key for enrollment codes' },
    );
    const access = keys('access-token');
    checks.push(
      access.length > 0
        ? { check: 'access_key', status: 'ok', detail: `relay key for access tokens: ${access.join(', ')}` }
        : { check: 'access_key', status: 'fail', detail: 'the document lists no relay key for access tokens' },
    );
    checks.push(
      isHttpsOrLoopback(doc.api_url)
        ? { check: 'api_url', status: 'ok', detail: doc.api_url }
        : { check: 'api_url', status: 'fail', detail: `the API URL ${doc.api_url} is not https` },
    );
  }
  return {
    name: d.name,
    deployment_id: doc?.deployment_id ?? d.doc.deployment_id,
    at: at.toISOString(),
    verifies: verification.failed === undefined,
    ok: checks.every((c) => c.status === 'ok'),
    checks,
  };
}
