/**
 * Redeeming an enrollment code with a signed proof. Every refusal is the one uniform
 * 403 invalid_enrollment; the reason goes to the log only.
 */
import { randomUUID, verify } from 'node:crypto';
import {
  type Credentials,
  type EnrollmentRequest,
  enrollmentCodeSigningBytes,
  enrollmentKeyRecordFields,
  enrollmentProofBytes,
  enrollmentProofFields,
  keyRecordBytes,
  PROOF_MAX_SKEW_MS,
  parseEnrollmentCode,
  SvcError,
} from '@svc/shared';
import { equalHashes, hashSecret, issueAccessToken, newApiKey } from '../auth/agent-credentials.js';
import { encryptionKeyProblem, signingKeyProblem } from '../auth/public-keys.js';
import { verifyEd25519 } from '../auth/signatures.js';
import type { RelayContext } from '../context.js';
import { cleanupIncarnation } from './revocation.js';

const refuse = (reason: string): never => {
  throw new SvcError('invalid_enrollment', undefined, { detail: reason });
};

export async function enroll(ctx: RelayContext, body: EnrollmentRequest): Promise<Credentials> {
  const now = ctx.now();
  let code: ReturnType<typeof parseEnrollmentCode>;
  try {
    code = parseEnrollmentCode(body.enrollment_code);
  } catch (err) {
    return refuse(`malformed code: ${(err as Error).message}`);
  }
  const b = code.bindings;
  const relayKey = ctx.deployment.relayKey;
  if (code.kid !== relayKey.kid) refuse('code signed by an unknown relay key');
  if (!verify(null, enrollmentCodeSigningBytes(b, code.kid), relayKey.publicKey, code.signature)) {
    refuse('code signature does not verify');
  }
  if (b.deployment_id !== ctx.deployment.deploymentId) refuse('code for another deployment');
  const grant = (await ctx.ledger.getGrant(b.grant_id)) ?? refuse('unknown grant');
  if (!equalHashes(grant.secret_hash, hashSecret(code.secret))) refuse('grant secret mismatch');
  if (grant.consumed_at !== null) refuse('grant already consumed');
  if (grant.revoked_at !== null) refuse('grant revoked');
  if (grant.expires_at <= now) refuse('grant expired');
  if (
    grant.tenant_id !== b.tenant_id ||
    grant.agent_id !== b.agent_id ||
    grant.agent_number !== b.agent_number ||
    grant.capabilities.join(',') !== [...b.capabilities].sort().join(',')
  ) {
    refuse('code bindings differ from the grant');
  }
  if (!ctx.config.tenants.includes(grant.tenant_id)) refuse('tenant no longer served');
  const issuedAt = Date.parse(body.issued_at);
  if (!Number.isFinite(issuedAt) || Math.abs(now - issuedAt) > PROOF_MAX_SKEW_MS)
    refuse('proof timestamp outside the allowed skew');
  const keyProblem = signingKeyProblem(body.signing_public_key) ?? encryptionKeyProblem(body.encryption_public_key);
  if (keyProblem !== undefined) refuse(`bad key: ${keyProblem}`);
  // what the grant binds (not what the code claims), and the keys of the request
  const proofBytes = enrollmentProofBytes(
    enrollmentProofFields({ ...grant, grant_id: grant.id, deployment_id: ctx.deployment.deploymentId }, body),
  );
  if (!verifyEd25519(body.signing_public_key, proofBytes, body.proof)) refuse('proof signature does not verify');
  // key record version 1, signed by the same identity over the same bindings (peers check it again)
  const record = enrollmentKeyRecordFields(
    enrollmentProofFields({ ...grant, grant_id: grant.id, deployment_id: ctx.deployment.deploymentId }, body),
  );
  if (!verifyEd25519(body.signing_public_key, keyRecordBytes(record), body.key_record_signature))
    refuse('key record signature does not verify');

  const active = await ctx.ledger.activeAgent(grant.tenant_id, grant.agent_id);
  if (active) refuse('agent id already enrolled and not revoked');

  // A revoked prior incarnation must be cleaned up before its id is reused; if that
  // cannot finish, answer 503 and leave the grant unspent so the same request can be retried.
  for (const prior of await ctx.ledger.pendingCleanups(grant.tenant_id, grant.agent_id, grant.agent_number)) {
    // revoked offline and not yet seen by a cleanup round: its streams end now, here and elsewhere
    ctx.messaging.agentRevoked(prior);
    await cleanupIncarnation(ctx, prior);
  }

  const rowId = randomUUID();
  const apiKey = newApiKey();
  const apiKeyExpires = now + ctx.config.apiKeyTtlSeconds * 1000;
  const outcome = await ctx.ledger.enroll(
    {
      id: rowId,
      tenant_id: grant.tenant_id,
      agent_id: grant.agent_id,
      agent_number: grant.agent_number,
      capabilities: grant.capabilities,
      signing_public_key: body.signing_public_key,
      encryption_public_key: body.encryption_public_key,
      display_name: body.display_name ?? null,
      description: body.description ?? null,
      discoverable: body.discoverable ?? true,
      grant_id: grant.id,
      created_at: now,
    },
    { hash: apiKey.hash, created_at: now, expires_at: apiKeyExpires },
    { created_at: body.issued_at, signature: body.key_record_signature },
    now,
  );
  if (outcome === 'grant_unavailable') refuse('grant consumed concurrently');
  if (outcome === 'name_taken') refuse('agent id or number taken');
  ctx.logger.info({ tenant_id: grant.tenant_id, agent_id: grant.agent_id, grant_id: grant.id }, 'agent enrolled');

  const access = await issueAccessToken(
    relayKey,
    {
      sub: grant.agent_id,
      svc_incarnation_id: rowId,
      svc_agent_number: grant.agent_number,
      svc_deployment_id: ctx.deployment.deploymentId,
      svc_tenant_id: grant.tenant_id,
      svc_capabilities: grant.capabilities,
    },
    ctx.config.publicUrl,
    now,
  );
  return {
    agent_id: grant.agent_id,
    agent_number: grant.agent_number,
    tenant_id: grant.tenant_id,
    deployment_id: ctx.deployment.deploymentId,
    capabilities: grant.capabilities,
    api_key: apiKey.key,
    api_key_expires_at: new Date(apiKeyExpires).toISOString(),
    access_token: access.token,
    access_token_expires_at: access.expiresAt.toISOString(),
  };
}
