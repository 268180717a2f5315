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

/** A step of a document's verification, in the order they are taken. */
export const DOCUMENT_STEPS = ['format', 'signer', 'signature', 'payload', 'deployment', 'validity'] as const;
export type DocumentStep = (typeof DOCUMENT_STEPS)[number];

/**
 * What verifying a document found: the steps it passed (with what each saw), and the first
 * that failed with the error verifyDeploymentDocument throws for it. `doc` is set once the
 * signature and payload passed: the content is the signer's, whatever a later step says.
 */
export interface DocumentVerification {
  passed: Array<{ step: DocumentStep; detail: string }>;
  failed?: { step: DocumentStep; error: DeploymentTrustError };
  doc?: DeploymentDocument;
}

/** Verifies the document's JWS against the bundle and returns the document. */
export async function verifyDeploymentDocument(
  jws: string,
  bundle: TrustBundle,
  options: { now?: Date; expectedDeploymentId?: string } = {},
): Promise<DeploymentDocument> {
  const result = await explainDeploymentDocument(jws, bundle, options);
  if (result.failed) throw result.failed.error;
  return result.doc as DeploymentDocument;
}

/**
 * The verification itself, step by step: verifyDeploymentDocument throws its first failure,
 * `svc deployment diagnose` shows every step. One path, so the two never disagree.
 */
export async function explainDeploymentDocument(
  jws: string,
  bundle: TrustBundle,
  options: { now?: Date; expectedDeploymentId?: string } = {},
): Promise<DocumentVerification> {
  const passed: DocumentVerification['passed'] = [];
  let doc: DeploymentDocument | undefined;
  const fail = (step: DocumentStep, code: DeploymentTrustError['code'], message: string): DocumentVerification => ({
    passed,
    failed: { step, error: new DeploymentTrustError(code, message) },
    ...(doc ? { doc } : {}),
  });
  const parts = jws.trim().split('.');
  if (parts.length !== 3) return fail('format', 'deployment_malformed', 'the deployment document is not a JWS');
  let header: { kid?: unknown; alg?: unknown; typ?: unknown };
  try {
    header = JSON.parse(fromUtf8(fromBase64url(parts[0] as string)));
  } catch {
    return fail('format', 'deployment_malformed', 'the deployment document header is damaged');
  }
  if (header.alg !== 'EdDSA' || header.typ !== DEPLOYMENT_DOCUMENT_JWS_TYPE) {
    return fail('format', 'deployment_untrusted', 'the deployment document is not signed with EdDSA');
  }
  passed.push({ step: 'format', detail: `a JWS (${DEPLOYMENT_DOCUMENT_JWS_TYPE}) signed with EdDSA` });
  const signer = bundle.signer_keys.find((k) => k.kid === header.kid);
  if (!signer) {
    return fail(
      'signer',
      'deployment_untrusted',
      'the deployment document is signed by a key the trust bundle does not list',
    );
  }
  passed.push({ step: 'signer', detail: `signed by ${signer.kid}, a key the trust bundle lists` });
  let payload: Uint8Array;
  try {
    const key = await importJWK({ ...signer.jwk, alg: 'EdDSA' }, 'EdDSA');
    payload = (await compactVerify(jws.trim(), key, { algorithms: ['EdDSA'] })).payload;
  } catch {
    return fail(
      'signature',
      'deployment_untrusted',
      'the deployment document signature does not verify against the trust bundle',
    );
  }
  passed.push({ step: 'signature', detail: `the signature verifies with ${signer.kid}` });
  let parsed: DeploymentDocument;
  try {
    parsed = JSON.parse(fromUtf8(payload)) as DeploymentDocument;
  } catch {
    return fail('payload', 'deployment_malformed', 'the deployment document payload is not JSON');
  }
  if (parsed.typ !== DEPLOYMENT_DOCUMENT_TYPE || !Array.isArray(parsed.relay_keys)) {
    return fail('payload', 'deployment_malformed', 'the deployment document has an unknown type');
  }
  doc = parsed;
  passed.push({ step: 'payload', detail: `a ${DEPLOYMENT_DOCUMENT_TYPE} document` });
  if (doc.deployment_id !== bundle.deployment_id) {
    return fail(
      'deployment',
      'deployment_mismatch',
      `the document is for deployment ${doc.deployment_id}, the trust bundle for ${bundle.deployment_id}`,
    );
  }
  if (options.expectedDeploymentId !== undefined && doc.deployment_id !== options.expectedDeploymentId) {
    return fail(
      'deployment',
      'deployment_mismatch',
      `expected deployment ${options.expectedDeploymentId}, got ${doc.deployment_id}`,
    );
  }
  passed.push({ step: 'deployment', detail: `for deployment ${doc.deployment_id}, as the trust bundle is` });
  const now = (options.now ?? new Date()).getTime();
  if (!(Date.parse(doc.expires_at) > now)) {
    return fail(
      'validity',
      'deployment_expired',
      `the deployment document expired at ${doc.expires_at}; ask the operator to renew it`,
    );
  }
  passed.push({ step: 'validity', detail: `issued ${doc.issued_at}, valid until ${doc.expires_at}` });
  return { passed, doc };
}
