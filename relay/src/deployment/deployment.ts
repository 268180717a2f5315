/**
 * The deployment on disk: `deployment init` creates the signer, the relay key, the
 * trust bundle and a signed deployment document. The signer may be moved offline
 * afterwards; `serve` then serves the document as it is and re-signs only when the
 * signer is present and the document is stale.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DEPLOYMENT_DOCUMENT_JWS_TYPE,
  DEPLOYMENT_DOCUMENT_TYPE,
  type DeploymentDocument,
  fromBase64url,
  fromUtf8,
  SvcError,
  TRUST_BUNDLE_TYPE,
  type TrustBundle,
} from '@svc/shared';
import { CompactSign } from 'jose';
import { generateKeyFile, keyFileExists, type LoadedKey, readKeyFile } from './key-files.js';

export const DOCUMENT_LIFETIME_DAYS = 90;
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;

export interface DeploymentPaths {
  dir: string;
  meta: string;
  signer: string;
  relayKey: string;
  trustBundle: string;
  document: string;
}

export function deploymentPaths(dataDir: string): DeploymentPaths {
  const dir = join(dataDir, 'deployment');
  return {
    dir,
    meta: join(dir, 'deployment.json'),
    signer: join(dir, 'signer.key.json'),
    relayKey: join(dataDir, 'keys', 'relay.key.json'),
    trustBundle: join(dir, 'trust-bundle.json'),
    document: join(dir, 'document.jws'),
  };
}

export interface Deployment {
  deploymentId: string;
  relayKey: LoadedKey;
  document: string;
  paths: DeploymentPaths;
}

const writeAtomic = (path: string, text: string, mode = 0o644): void => {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, path);
};

export function newDeploymentId(): string {
  return `dep_${randomBytes(9).toString('base64url')}`;
}

export interface InitOptions {
  deploymentId?: string | undefined;
  publicUrl: string;
  leafUrl?: string | null;
  tenants: string[];
}

/** Creates a deployment in the data dir; refuses to overwrite an existing one. */
export async function initDeployment(dataDir: string, opts: InitOptions): Promise<Deployment> {
  const paths = deploymentPaths(dataDir);
  if (existsSync(paths.meta)) {
    const existing = readMeta(paths);
    throw new SvcError(
      'config_invalid',
      `${dataDir} already holds deployment ${existing}; use another --data-dir or keep it`,
    );
  }
  const deploymentId = opts.deploymentId ?? newDeploymentId();
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(deploymentId))
    throw new SvcError('config_invalid', `invalid deployment id "${deploymentId}"`);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const signerFile = generateKeyFile(paths.signer);
  if (!keyFileExists(paths.relayKey)) generateKeyFile(paths.relayKey);
  const bundle: TrustBundle = {
    typ: TRUST_BUNDLE_TYPE,
    deployment_id: deploymentId,
    signer_keys: [{ kid: signerFile.kid, jwk: { kty: 'OKP', crv: 'Ed25519', x: signerFile.jwk.x } }],
    created_at: new Date().toISOString(),
  };
  writeAtomic(paths.trustBundle, `${JSON.stringify(bundle, null, 2)}\n`);
  writeAtomic(
    paths.meta,
    `${JSON.stringify({ deployment_id: deploymentId, created_at: bundle.created_at }, null, 2)}\n`,
  );
  return loadDeployment(dataDir, {
    publicUrl: opts.publicUrl,
    leafUrl: opts.leafUrl ?? null,
    tenants: opts.tenants,
    deploymentId,
  });
}

function readMeta(paths: DeploymentPaths): string {
  return (JSON.parse(readFileSync(paths.meta, 'utf8')) as { deployment_id: string }).deployment_id;
}

export function hasDeployment(dataDir: string): boolean {
  return existsSync(deploymentPaths(dataDir).meta);
}

/** Refuses a data dir without a deployment, naming the command that creates one (and creating nothing). */
export function requireDeployment(dataDir: string): void {
  if (!hasDeployment(dataDir)) {
    throw new SvcError(
      'config_invalid',
      `no deployment in ${dataDir}; create one with: svc-relay deployment init --data-dir ${dataDir}`,
    );
  }
}

/**
 * Loads the deployment, re-signing its document when stale and the signer is present;
 * with `resign: false` (local operator commands) it reads the document as it is.
 */
export async function loadDeployment(
  dataDir: string,
  opts: {
    publicUrl: string;
    tenants: string[];
    /** the leaf URL edges dial (signed, so that a relay cannot point them elsewhere); none without a leaf listener */
    leafUrl?: string | null;
    deploymentId?: string | undefined;
    now?: Date;
    resign?: boolean;
  },
): Promise<Deployment> {
  const paths = deploymentPaths(dataDir);
  requireDeployment(dataDir);
  const deploymentId = readMeta(paths);
  if (opts.deploymentId !== undefined && opts.deploymentId !== deploymentId) {
    throw new SvcError(
      'config_invalid',
      `SVC_RELAY_DEPLOYMENT_ID is ${opts.deploymentId} but ${dataDir} holds deployment ${deploymentId}`,
    );
  }
  const relayKey = readKeyFile(paths.relayKey);
  const now = opts.now ?? new Date();
  let document = existsSync(paths.document) ? readFileSync(paths.document, 'utf8').trim() : undefined;
  const stale =
    opts.resign !== false &&
    (!document ||
      documentIsStale(document, {
        deploymentId,
        relayKey,
        publicUrl: opts.publicUrl,
        leafUrl: opts.leafUrl ?? null,
        tenants: opts.tenants,
        now,
      }));
  if (stale) {
    if (!keyFileExists(paths.signer)) {
      if (!document)
        throw new SvcError('config_invalid', `no deployment document in ${paths.dir} and no signer to create one`);
      // The signer is offline: serve what we have; clients will report it if it is unusable.
    } else {
      document = await signDocument(readKeyFile(paths.signer), {
        typ: DEPLOYMENT_DOCUMENT_TYPE,
        deployment_id: deploymentId,
        api_url: opts.publicUrl,
        leaf_url: opts.leafUrl ?? null,
        tenants: opts.tenants,
        relay_keys: [{ kid: relayKey.kid, jwk: relayKey.publicJwk, use: ['access-token', 'enrollment-code'] }],
        issued_at: now.toISOString(),
        expires_at: new Date(now.getTime() + DOCUMENT_LIFETIME_DAYS * 24 * 3600 * 1000).toISOString(),
      });
      writeAtomic(paths.document, `${document}\n`);
    }
  }
  if (!document) throw new SvcError('config_invalid', `no deployment document in ${paths.dir}`);
  return { deploymentId, relayKey, document, paths };
}

function documentIsStale(
  jws: string,
  want: {
    deploymentId: string;
    relayKey: LoadedKey;
    publicUrl: string;
    leafUrl: string | null;
    tenants: string[];
    now: Date;
  },
): boolean {
  try {
    const doc = JSON.parse(fromUtf8(fromBase64url(jws.split('.')[1] ?? ''))) as DeploymentDocument;
    return (
      doc.deployment_id !== want.deploymentId ||
      doc.api_url !== want.publicUrl ||
      (doc.leaf_url ?? null) !== want.leafUrl ||
      doc.tenants.join(',') !== want.tenants.join(',') ||
      !doc.relay_keys.some((k) => k.kid === want.relayKey.kid) ||
      Date.parse(doc.expires_at) - want.now.getTime() < RENEW_BEFORE_MS
    );
  } catch {
    return true;
  }
}

export async function signDocument(signer: LoadedKey, doc: DeploymentDocument): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(doc)))
    .setProtectedHeader({ alg: 'EdDSA', kid: signer.kid, typ: DEPLOYMENT_DOCUMENT_JWS_TYPE })
    .sign(signer.privateKey);
}
