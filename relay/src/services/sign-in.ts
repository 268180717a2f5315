/**
 * Challenge sign-in and the API key → access JWT exchange. A challenge is a random id with
 * its expiry (60 s) and tenant, and a nonce the relay derives from it and the agent id
 * with a key of its own: nothing is stored when it is issued. A sign-in checks the id's
 * expiry, derives the nonce again, verifies the agent's signature, and only then spends the
 * id (one ledger row until it expires, the same on every relay instance), so a challenge
 * signs in once. Nobody without the agent's key writes anything, and a flood of requests
 * naming an agent neither fills a table nor pushes that agent's own challenge out. An
 * expired (not revoked) credential may sign in: that is how an agent recovers without a
 * new grant.
 */
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
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
import type { LoadedKey } from '../deployment/key-files.js';
import type { AgentRow } from '../ledger/ledger.js';

export const CHALLENGE_TTL_MS = 60_000;

/** `chl_<random>.<expiry, ms in base 36>.<tenant>` */
const CHALLENGE_ID = /^chl_([A-Za-z0-9_-]{22})\.([0-9a-z]{1,11})\.(.+)$/;

/**
 * The key nonces are derived with: from the relay key, which every instance of a deployment
 * holds, so any instance checks a challenge another issued. Derived once per key.
 */
const nonceKeys = new WeakMap<LoadedKey, Buffer>();
function nonceKey(relayKey: LoadedKey): Buffer {
  let key = nonceKeys.get(relayKey);
  if (!key) {
    const secret = relayKey.privateKey.export({ format: 'der', type: 'pkcs8' });
    key = Buffer.from(hkdfSync('sha256', secret, 'svc', 'svc.sign-in-challenge/v1', 32));
    nonceKeys.set(relayKey, key);
  }
  return key;
}

function nonceFor(ctx: RelayContext, challengeId: string, tenantId: string, agentId: string): string {
  return createHmac('sha256', nonceKey(ctx.deployment.relayKey))
    .update(JSON.stringify([ctx.deployment.deploymentId, tenantId, agentId, challengeId]))
    .digest('base64url');
}

/**
 * The same answer for every agent id, enrolled, revoked or never seen (nothing is looked
 * up): the answer never tells which agent ids exist, and the sign-in that follows fails
 * with its one uniform code.
 */
export async function createChallenge(ctx: RelayContext, body: ChallengeRequest): Promise<ChallengeResponse> {
  const refuse = (reason: string): never => {
    throw new SvcError('invalid_challenge_request', undefined, { detail: reason });
  };
  if (body.deployment_id !== ctx.deployment.deploymentId) refuse('wrong deployment');
  if (!ctx.config.tenants.includes(body.tenant_id)) refuse('unknown tenant');
  const expiresAt = ctx.now() + CHALLENGE_TTL_MS;
  const id = `chl_${randomBytes(16).toString('base64url')}.${expiresAt.toString(36)}.${body.tenant_id}`;
  return {
    challenge_id: id,
    nonce: nonceFor(ctx, id, body.tenant_id, body.agent_id),
    expires_at: new Date(expiresAt).toISOString(),
  };
}

export async function signIn(ctx: RelayContext, body: SignInRequest): Promise<Credentials> {
  const refuse = (reason: string): never => {
    throw new SvcError('invalid_sign_in', undefined, { detail: reason });
  };
  const now = ctx.now();
  const m = CHALLENGE_ID.exec(body.challenge_id) ?? refuse('not a challenge id');
  const expiresAt = Number.parseInt(m[2] as string, 36);
  const tenantId = m[3] as string;
  if (!ctx.config.tenants.includes(tenantId)) refuse('challenge of another tenant');
  if (expiresAt <= now) refuse('stale challenge');
  if (expiresAt > now + CHALLENGE_TTL_MS) refuse('challenge expiring later than any issued');
  const agent = (await ctx.ledger.activeAgent(tenantId, body.agent_id)) ?? refuse('unknown or revoked agent');
  const proof = signInProofBytes({
    challenge_id: body.challenge_id,
    nonce: nonceFor(ctx, body.challenge_id, tenantId, agent.agent_id),
    agent_id: agent.agent_id,
    deployment_id: ctx.deployment.deploymentId,
    tenant_id: agent.tenant_id,
  });
  if (!verifyEd25519(agent.signing_public_key, proof, body.signature)) refuse('wrong signature');
  if (!(await ctx.ledger.spendChallenge(body.challenge_id, agent.id, expiresAt, now))) refuse('spent challenge');
  const apiKey = newApiKey();
  const expires = now + ctx.config.apiKeyTtlSeconds * 1000;
  await ctx.ledger.replaceApiKey({ hash: apiKey.hash, agent_row: agent.id, created_at: now, expires_at: expires });
  ctx.logger.info({ tenant_id: agent.tenant_id, agent_id: agent.agent_id }, 'agent signed in');
  const access = await accessTokenFor(ctx, agent, now);
  return {
    agent_id: agent.agent_id,
    agent_number: agent.agent_number,
    tenant_id: agent.tenant_id,
    deployment_id: ctx.deployment.deploymentId,
    capabilities: agent.capabilities,
    api_key: apiKey.key,
    api_key_expires_at: new Date(expires).toISOString(),
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
