/**
 * Challenge sign-in and the API key → access JWT exchange. A challenge is a random
 * nonce that lives 60 s and is consumed by its first use. An expired (not revoked)
 * credential may sign in: that is how an agent recovers without a new grant.
 */
import { randomBytes } from 'node:crypto';
import {
  type ChallengeRequest,
  type ChallengeResponse,
  type Credentials,
  type SignInRequest,
  SvcError,
  signInProofBytes,
  type TokenResponse,
} from '@svc/shared';
import { hashSecret, issueAccessToken, newApiKey } from '../auth/agent-credentials.js';
import { verifyEd25519 } from '../auth/signatures.js';
import type { RelayContext } from '../context.js';
import { RateLimitedError } from '../http/rate-limit.js';
import type { AgentRow } from '../ledger/ledger.js';

export const CHALLENGE_TTL_MS = 60_000;

/**
 * A challenge for an agent that does not exist (or is revoked) is made and answered exactly
 * like one for an agent that does, but not stored: the answer never tells which agent ids
 * exist, and the sign-in that follows fails with its one uniform code.
 */
export async function createChallenge(ctx: RelayContext, body: ChallengeRequest): Promise<ChallengeResponse> {
  const refuse = (reason: string): never => {
    throw new SvcError('invalid_challenge_request', undefined, { detail: reason });
  };
  if (body.deployment_id !== ctx.deployment.deploymentId) refuse('wrong deployment');
  if (!ctx.config.tenants.includes(body.tenant_id)) refuse('unknown tenant');
  const now = ctx.now();
  const { challengesMax, challengesPerAgent } = ctx.config.limits;
  // Checked before the agent is looked up, so a full table turns every agent id away alike.
  if (await ctx.ledger.challengeTableFull(challengesMax, now)) {
    throw new RateLimitedError(Math.ceil(CHALLENGE_TTL_MS / 1000), undefined, 'challenge table full');
  }
  const agent = await ctx.ledger.activeAgent(body.tenant_id, body.agent_id);
  const challenge = {
    id: `chl_${randomBytes(16).toString('base64url')}`,
    agent_row: agent?.id ?? '',
    nonce: randomBytes(32).toString('base64url'),
    created_at: now,
    expires_at: now + CHALLENGE_TTL_MS,
  };
  if (agent) await ctx.ledger.insertBoundedChallenge(challenge, challengesPerAgent);
  else ctx.logger.info({ tenant_id: body.tenant_id }, 'challenge for an unknown or revoked agent (not stored)');
  return {
    challenge_id: challenge.id,
    nonce: challenge.nonce,
    expires_at: new Date(challenge.expires_at).toISOString(),
  };
}

export async function signIn(ctx: RelayContext, body: SignInRequest): Promise<Credentials> {
  const refuse = (reason: string): never => {
    throw new SvcError('invalid_sign_in', undefined, { detail: reason });
  };
  const now = ctx.now();
  const challenge = (await ctx.ledger.consumeChallenge(body.challenge_id, now)) ?? refuse('unknown or spent challenge');
  if (challenge.expires_at <= now) refuse('stale challenge');
  const agent = (await ctx.ledger.agentByRow(challenge.agent_row)) ?? refuse('challenge for a vanished agent');
  if (agent.revoked_at !== null) refuse('agent revoked');
  if (agent.agent_id !== body.agent_id) refuse('challenge issued to another agent');
  const proof = signInProofBytes({
    challenge_id: challenge.id,
    nonce: challenge.nonce,
    agent_id: agent.agent_id,
    deployment_id: ctx.deployment.deploymentId,
    tenant_id: agent.tenant_id,
  });
  if (!verifyEd25519(agent.signing_public_key, proof, body.signature)) refuse('wrong signature');
  const apiKey = newApiKey();
  const expiresAt = now + ctx.config.apiKeyTtlSeconds * 1000;
  await ctx.ledger.replaceApiKey({ hash: apiKey.hash, agent_row: agent.id, created_at: now, expires_at: expiresAt });
  ctx.logger.info({ tenant_id: agent.tenant_id, agent_id: agent.agent_id }, 'agent signed in');
  const access = await accessTokenFor(ctx, agent, now);
  return {
    agent_id: agent.agent_id,
    agent_number: agent.agent_number,
    tenant_id: agent.tenant_id,
    deployment_id: ctx.deployment.deploymentId,
    capabilities: agent.capabilities,
    api_key: apiKey.key,
    api_key_expires_at: new Date(expiresAt).toISOString(),
    access_token: access.token,
    access_token_expires_at: access.expiresAt.toISOString(),
  };
}

function accessTokenFor(ctx: RelayContext, agent: AgentRow, now: number) {
  return issueAccessToken(
    ctx.deployment.relayKey,
    {
      sub: agent.agent_id,
      svc_incarnation_id: agent.id,
      svc_agent_number: agent.agent_number,
      svc_deployment_id: ctx.deployment.deploymentId,
      svc_tenant_id: agent.tenant_id,
      svc_capabilities: agent.capabilities,
    },
    ctx.config.publicUrl,
    now,
  );
}

/** API key → access JWT carrying the capabilities granted at enrollment. */
export async function exchangeApiKey(ctx: RelayContext, apiKey: string | undefined): Promise<TokenResponse> {
  const refuse = (reason: string): never => {
    throw new SvcError('invalid_api_key', undefined, { detail: reason });
  };
  if (!apiKey?.startsWith('svc_ak_')) refuse('no API key');
  const now = ctx.now();
  const row = (await ctx.ledger.apiKey(hashSecret(apiKey as string))) ?? refuse('unknown API key');
  if (row.revoked_at !== null) refuse('API key revoked or replaced');
  if (row.expires_at <= now) refuse('API key expired');
  const agent = (await ctx.ledger.agentByRow(row.agent_row)) ?? refuse('agent vanished');
  if (agent.revoked_at !== null) refuse('agent revoked');
  const access = await accessTokenFor(ctx, agent, now);
  return {
    access_token: access.token,
    token_type: 'Bearer',
    // whole seconds from the token's iat to its exp
    expires_in: Math.floor(access.expiresAt.getTime() / 1000) - Math.floor(now / 1000),
    expires_at: access.expiresAt.toISOString(),
    capabilities: agent.capabilities,
  };
}
