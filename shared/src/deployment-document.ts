/**
 * The signed deployment identity. The deployment signer (Ed25519, may stay offline)
 * signs a JWS over the document; the trust bundle, distributed out of band, lists the
 * signer's public keys. Clients verify document ← bundle before trusting any relay key.
 */
import { compactVerify, importJWK, type JWK } from 'jose';
import { fromBase64url, fromUtf8 } from './base64url.js';

export const DEPLOYMENT_DOCUMENT_TYPE = 'svc.deployment/v1';
export const TRUST_BUNDLE_TYPE = 'svc.trust-bundle/v1';
export const DEPLOYMENT_DOCUMENT_JWS_TYPE = 'svc-deployment+jws';

export interface PublicKeyEntry {
  kid: string;
  /** OKP Ed25519 public JWK */
  jwk: JWK;
  /** what the key signs: access JWTs and enrollment codes */
  use: Array<'access-token' | 'enrollment-code'>;
}

export interface DeploymentDocument {
  typ: typeof DEPLOYMENT_DOCUMENT_TYPE;
  deployment_id: string;
  api_url: string;
  leaf_url: string | null;
  tenants: string[];
  relay_keys: PublicKeyEntry[];
  issued_at: string;
  expires_at: string;
}

export interface TrustBundle {
  typ: typeof TRUST_BUNDLE_TYPE;
  deployment_id: string;
  signer_keys: Array<{ kid: string; jwk: JWK }>;
  created_at: string;
}

export class DeploymentTrustError extends Error {
  readonly code: 'deployment_untrusted' | 'deployment_mismatch' | 'deployment_expired' | 'deployment_malformed';
  constructor(code: DeploymentTrustError['code'], message: string) {
    super(message);
    this.name = 'DeploymentTrustError';
    this.code = code;
  }
}

export function parseTrustBundle(value: unknown): TrustBundle {
  const v = value as Partial<TrustBundle> | null;
  if (
    !v ||
    v.typ !== TRUST_BUNDLE_TYPE ||
    typeof v.deployment_id !== 'string' ||
    !Array.isArray(v.signer_keys) ||
    v.signer_keys.length === 0 ||
    !v.signer_keys.every((k) => typeof k?.kid === 'string' && typeof k.jwk === 'object' && k.jwk !== null)
  ) {
    throw new DeploymentTrustError('deployment_malformed', 'not an svc trust bundle');
  }
  return v as TrustBundle;
}

/** Verifies the document's JWS against the bundle and returns the document. */
export async function verifyDeploymentDocument(
  jws: string,
  bundle: TrustBundle,
  options: { now?: Date; expectedDeploymentId?: string } = {},
): Promise<DeploymentDocument> {
  const parts = jws.trim().split('.');
  if (parts.length !== 3)
    throw new DeploymentTrustError('deployment_malformed', 'the deployment document is not a JWS');
  let header: { kid?: unknown; alg?: unknown; typ?: unknown };
  try {
    header = JSON.parse(fromUtf8(fromBase64url(parts[0] as string)));
  } catch {
    throw new DeploymentTrustError('deployment_malformed', 'the deployment document header is damaged');
  }
  if (header.alg !== 'EdDSA' || header.typ !== DEPLOYMENT_DOCUMENT_JWS_TYPE) {
    throw new DeploymentTrustError('deployment_untrusted', 'the deployment document is not signed with EdDSA');
  }
  const signer = bundle.signer_keys.find((k) => k.kid === header.kid);
  if (!signer)
    throw new DeploymentTrustError(
      'deployment_untrusted',
      'the deployment document is signed by a key the trust bundle does not list',
    );
  let payload: Uint8Array;
  try {
    const key = await importJWK({ ...signer.jwk, alg: 'EdDSA' }, 'EdDSA');
    payload = (await compactVerify(jws.trim(), key, { algorithms: ['EdDSA'] })).payload;
  } catch {
    throw new DeploymentTrustError(
      'deployment_untrusted',
      'the deployment document signature does not verify against the trust bundle',
    );
  }
  let doc: DeploymentDocument;
  try {
    doc = JSON.parse(fromUtf8(payload)) as DeploymentDocument;
  } catch {
    throw new DeploymentTrustError('deployment_malformed', 'the deployment document payload is not JSON');
  }
  if (doc.typ !== DEPLOYMENT_DOCUMENT_TYPE || !Array.isArray(doc.relay_keys)) {
    throw new DeploymentTrustError('deployment_malformed', 'the deployment document has an unknown type');
  }
  if (doc.deployment_id !== bundle.deployment_id) {
    throw new DeploymentTrustError(
      'deployment_mismatch',
      `the document is for deployment ${doc.deployment_id}, the trust bundle for ${bundle.deployment_id}`,
    );
  }
  if (options.expectedDeploymentId !== undefined && doc.deployment_id !== options.expectedDeploymentId) {
    throw new DeploymentTrustError(
      'deployment_mismatch',
      `expected deployment ${options.expectedDeploymentId}, got ${doc.deployment_id}`,
    );
  }
  const now = (options.now ?? new Date()).getTime();
  if (!(Date.parse(doc.expires_at) > now)) {
    throw new DeploymentTrustError(
      'deployment_expired',
      `the deployment document expired at ${doc.expires_at}; ask the operator to renew it`,
    );
  }
  return doc;
}
