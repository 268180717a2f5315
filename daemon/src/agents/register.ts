/**
 * Registration: the enrollment code is checked against the trusted deployment BEFORE it
 * is redeemed (trust bundle → deployment document → relay key → code signature, then
 * the code's deployment id, API URL and tenant), then a fresh identity seed is vaulted,
 * the proof signed, and the code redeemed. The seed is stored before the relay call, so
 * a crash after redemption cannot lose the identity that the relay now knows.
 */
import {
  type EnrollmentBindings,
  EnrollmentCodeFormatError,
  enrollmentCodeSigningBytes,
  enrollmentKeyRecordFields,
  enrollmentProofBytes,
  enrollmentProofFields,
  fromBase64url,
  keyRecordBytes,
  parseEnrollmentCode,
  toBase64url,
} from '@svc/shared';
import { deriveIdentityKeys, ed25519Sign, ed25519Verify } from '@svc/shared/node';
import type { RegisterInput } from '../client/api.js';
import type { Deployment } from '../deployments/store.js';
import { DaemonError } from '../errors.js';
import { isLocalName } from '../paths.js';
import { relayCall } from '../relay/http.js';
import { isBearerCredential } from '../session/credentials.js';
import { forgetAgentSecrets, newSeed, storeApiKey, storeSeed, type Vault } from '../vault/index.js';
import type { AgentConfig } from './store.js';

export interface EnrollmentAnswer {
  agent_id: string;
  agent_number: string;
  tenant_id: string;
  deployment_id: string;
  capabilities: string[];
  api_key: string;
  api_key_expires_at: string;
  access_token: string;
  access_token_expires_at: string;
}

/** Verifies the code against the deployment; returns its bindings. */
export function verifyEnrollmentCode(code: string, deployment: Deployment, now = new Date()): EnrollmentBindings {
  let parsed: ReturnType<typeof parseEnrollmentCode>;
  try {
    parsed = parseEnrollmentCode(code);
  } catch (err) {
    if (err instanceof EnrollmentCodeFormatError) throw new DaemonError('validation_failed', err.message);
    throw err;
  }
  const doc = deployment.doc;
  if (!(Date.parse(doc.expires_at) > now.getTime())) {
    throw new DaemonError('deployment_expired', `the deployment document of ${deployment.name} expired; renew it`);
  }
  const key = doc.relay_keys.find((k) => k.kid === parsed.kid && k.use.includes('enrollment-code'));
  const x = key?.jwk.x;
  if (!key || typeof x !== 'string' || key.jwk.crv !== 'Ed25519') {
    throw new DaemonError(
      'deployment_untrusted',
      `the enrollment code is signed by key ${parsed.kid}, which deployment ${deployment.name} does not list`,
    );
  }
  if (!ed25519Verify(fromBase64url(x), enrollmentCodeSigningBytes(parsed.bindings, parsed.kid), parsed.signature)) {
    throw new DaemonError(
      'deployment_untrusted',
      'the enrollment code signature does not verify against the relay key',
    );
  }
  const b = parsed.bindings;
  if (b.deployment_id !== doc.deployment_id) {
    throw new DaemonError(
      'deployment_mismatch',
      `the code is for deployment ${b.deployment_id}, not ${doc.deployment_id}`,
    );
  }
  if (b.api_url !== doc.api_url) {
    throw new DaemonError(
      'deployment_mismatch',
      `the code names API ${b.api_url}, the deployment serves ${doc.api_url}`,
    );
  }
  if (!doc.tenants.includes(b.tenant_id)) {
    throw new DaemonError('deployment_mismatch', `the code's tenant ${b.tenant_id} is not a tenant of this deployment`);
  }
  if (!(Date.parse(b.expires_at) > now.getTime())) {
    throw new DaemonError('invalid_enrollment', `the enrollment code expired at ${b.expires_at}; ask for a new one`);
  }
  return b;
}

export async function register(opts: {
  input: RegisterInput;
  deployment: Deployment;
  vault: Vault;
  exists: (name: string) => boolean;
}): Promise<{ config: AgentConfig; answer: EnrollmentAnswer }> {
  const { input, deployment, vault } = opts;
  const b = verifyEnrollmentCode(input.enrollment_code, deployment);
  const name = input.name ?? b.agent_number;
  if (!isLocalName(name)) throw new DaemonError('validation_failed', `invalid local agent name ${name}`);
  if (opts.exists(name))
    throw new DaemonError('validation_failed', `a local agent named ${name} exists; choose --name`);

  const seed = newSeed();
  const keys = deriveIdentityKeys(seed, 0);
  storeSeed(vault, name, seed);
  const signing = toBase64url(keys.signPublic);
  const encryption = toBase64url(keys.encPublic);
  const issued_at = new Date().toISOString();
  const proofFields = enrollmentProofFields(b, {
    signing_public_key: signing,
    encryption_public_key: encryption,
    issued_at,
  });
  const proof = ed25519Sign(keys.signPrivate, enrollmentProofBytes(proofFields));
  // key record version 1, which peers check against the signing key they pin
  const keyRecordSignature = ed25519Sign(keys.signPrivate, keyRecordBytes(enrollmentKeyRecordFields(proofFields)));
  let answer: EnrollmentAnswer;
  try {
    answer = await relayCall<EnrollmentAnswer>(
      { baseUrl: deployment.doc.api_url, ...(deployment.ca_bundle ? { ca: deployment.ca_bundle } : {}) },
      {
        method: 'POST',
        path: '/api/v1/enrollment',
        timeoutMs: 30_000,
        body: {
          enrollment_code: input.enrollment_code.trim(),
          signing_public_key: signing,
          encryption_public_key: encryption,
          issued_at,
          proof: toBase64url(proof),
          key_record_signature: toBase64url(keyRecordSignature),
          ...(input.display_name !== undefined ? { display_name: input.display_name } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.discoverable !== undefined ? { discoverable: input.discoverable } : {}),
        },
      },
    );
  } catch (err) {
    // refused: the relay never saw these keys bound to an agent, so forget them
    if ((err as { relayStatus?: number }).relayStatus !== undefined) forgetAgentSecrets(vault, name);
    throw err;
  }
  const relabelled = answerDiffers(answer, b);
  if (relabelled) {
    // the relay redeemed the code it signed, then named the agent otherwise: its labels are
    // never stored (they route local sends and pick the deployment a session trusts)
    forgetAgentSecrets(vault, name);
    throw new DaemonError(
      'enrollment_answer_mismatch',
      `The relay answered the enrollment with ${relabelled}, not what its code names; nothing was saved. Ask the relay's operator to check it.`,
    );
  }
  // an API key no request can carry is not kept: the session signs in with the identity key instead
  if (isBearerCredential(answer.api_key)) storeApiKey(vault, name, answer.api_key);
  const config: AgentConfig = {
    name,
    agent_id: b.agent_id,
    agent_number: b.agent_number,
    tenant_id: b.tenant_id,
    deployment: deployment.name,
    deployment_id: b.deployment_id,
    api_url: deployment.doc.api_url,
    capabilities: [...b.capabilities],
    signing_public_key: signing,
    encryption_public_key: encryption,
    registered_at: new Date().toISOString(),
    rotation: 0,
  };
  return { config, answer };
}

/** What the relay's enrollment answer says otherwise than the code it signed, if anything. */
function answerDiffers(answer: EnrollmentAnswer, b: EnrollmentBindings): string | undefined {
  if (typeof answer !== 'object' || answer === null) return 'no enrollment answer at all';
  for (const k of ['agent_id', 'agent_number', 'tenant_id', 'deployment_id'] as const) {
    if (answer[k] !== b[k]) return `${k} ${JSON.stringify(answer[k])}`;
  }
  const sorted = (c: readonly string[]) => [...c].sort().join(',');
  if (!Array.isArray(answer.capabilities) || sorted(answer.capabilities) !== sorted(b.capabilities)) {
    return `capabilities ${JSON.stringify(answer.capabilities)}`;
  }
  return undefined;
}
