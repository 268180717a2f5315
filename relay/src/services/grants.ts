/** Minting single-use enrollment grants (the admin route and `svc-relay grant` share this). */
import { randomBytes, sign } from 'node:crypto';
import { Value } from '@sinclair/typebox/value';
import {
  AgentId,
  AgentNumber,
  type Capability,
  type EnrollmentBindings,
  encodeEnrollmentCode,
  enrollmentCodeSigningBytes,
  GRANT_TTL,
  type GrantResponse,
  SvcError,
} from '@svc/shared';
import { hashSecret } from '../auth/agent-credentials.js';
import type { RelayContext } from '../context.js';

export interface MintGrantInput {
  tenantId: string;
  agentId: string;
  agentNumber?: string | undefined;
  capabilities: Capability[];
  ttlSeconds?: number | undefined;
  /** who asked: the admin token's subject, or "local-operator" */
  createdBy: string;
}

type GrantContext = Pick<RelayContext, 'config' | 'deployment' | 'ledger' | 'now'>;

/** Refuses a tenant the relay does not serve, naming those it does (grants, and the operator's revoke). */
export function requireServedTenant(tenants: readonly string[], tenant: string): void {
  if (!tenants.includes(tenant)) {
    throw new SvcError(
      'binding_mismatch',
      `tenant ${tenant} is not served by this relay (it serves ${tenants.join(', ')})`,
    );
  }
}

/** An agent id of the grant route's form (the local commands check it as the route does). */
export function requireAgentId(agentId: string): void {
  if (!Value.Check(AgentId, agentId)) {
    throw new SvcError('validation_failed', 'agent_id must be letters, digits and _ . : @ -, at most 256 characters');
  }
}

export async function mintGrant(ctx: GrantContext, input: MintGrantInput): Promise<GrantResponse> {
  // what the grant route's schema checks, for the local command too: an agent id outside it
  // would enroll and then never get a sign-in challenge
  requireAgentId(input.agentId);
  const agentNumber = input.agentNumber ?? input.agentId;
  // Validated before anything is persisted: an agent id with . or : needs an explicit number.
  if (!Value.Check(AgentNumber, agentNumber)) {
    throw new SvcError(
      'validation_failed',
      input.agentNumber === undefined
        ? 'agent_id is not a valid agent number (letters, digits, _ and -, at most 128); give an agent number separately (agent_number; svc-relay grant: --agent-number)'
        : 'agent_number must be letters, digits, _ and -, at most 128 characters',
    );
  }
  requireServedTenant(ctx.config.tenants, input.tenantId);
  const ttl = input.ttlSeconds ?? GRANT_TTL.default;
  if (!Number.isInteger(ttl) || ttl < GRANT_TTL.min || ttl > GRANT_TTL.max) {
    throw new SvcError('validation_failed', `ttl_seconds must be an integer from ${GRANT_TTL.min} to ${GRANT_TTL.max}`);
  }
  const capabilities = [...new Set(input.capabilities)].sort();
  if (capabilities.length === 0)
    throw new SvcError('validation_failed', 'capabilities must name at least one capability');
  // the specification: nats-relay is for a dedicated uplink identity, never a general agent's
  if (capabilities.includes('nats-relay') && capabilities.length > 1) {
    throw new SvcError(
      'validation_failed',
      'nats-relay is for a dedicated leaf uplink identity: its grant holds no other capability (mint the agent a grant of its own)',
    );
  }
  const now = ctx.now();
  const grantId = `grt_${randomBytes(12).toString('base64url')}`;
  const secret = randomBytes(32);
  const expiresAt = now + ttl * 1000;
  const bindings: EnrollmentBindings = {
    deployment_id: ctx.deployment.deploymentId,
    tenant_id: input.tenantId,
    agent_id: input.agentId,
    agent_number: agentNumber,
    capabilities,
    grant_id: grantId,
    expires_at: new Date(expiresAt).toISOString(),
    api_url: ctx.config.publicUrl,
  };
  const key = ctx.deployment.relayKey;
  const signature = sign(null, enrollmentCodeSigningBytes(bindings, key.kid), key.privateKey);
  await ctx.ledger.insertGrant({
    id: grantId,
    tenant_id: input.tenantId,
    agent_id: input.agentId,
    agent_number: agentNumber,
    capabilities,
    secret_hash: hashSecret(secret),
    created_by: input.createdBy,
    created_at: now,
    expires_at: expiresAt,
  });
  return {
    enrollment_code: encodeEnrollmentCode(bindings, key.kid, signature, secret),
    capabilities,
    grant_id: grantId,
    agent_id: input.agentId,
    agent_number: agentNumber,
    tenant_id: input.tenantId,
    expires_at: bindings.expires_at,
  };
}
