/** Bearer checks run as onRequest hooks, before the body is parsed or validated. */
import { type AccessTokenClaims, type Capability, SvcError } from '@svc/shared';
import type { FastifyRequest } from 'fastify';
import type { AdminPrincipal } from '../auth/admin-token.js';
import { accessTokenVerifier, bearerOf } from '../auth/agent-credentials.js';
import type { RelayContext } from '../context.js';
import type { AgentRow } from '../ledger/ledger.js';

/** The capability every ordinary agent route requires (specification, "Capabilities"). */
export const HTTP_RELAY: Capability = 'http-relay';

declare module 'fastify' {
  interface FastifyRequest {
    admin?: AdminPrincipal;
    agent?: { claims: AccessTokenClaims; row: AgentRow };
  }
}

export function requireAdmin(ctx: RelayContext) {
  return async (request: FastifyRequest): Promise<void> => {
    const token = bearerOf(request.headers.authorization);
    if (!token) throw new SvcError('missing_token');
    if (!ctx.adminVerifier) {
      throw new SvcError(
        'invalid_token',
        'This relay has no external authority configured; use `svc-relay grant` on the relay host.',
      );
    }
    request.admin = await ctx.adminVerifier.verify(token);
  };
}

/** One verifier (and so one cache of verified tokens) per relay, shared by every route. */
const verifiers = new WeakMap<RelayContext, ReturnType<typeof accessTokenVerifier>>();

function verifierFor(ctx: RelayContext): ReturnType<typeof accessTokenVerifier> {
  let verify = verifiers.get(ctx);
  if (!verify) {
    verify = accessTokenVerifier(ctx.deployment.relayKey, ctx.config.publicUrl);
    verifiers.set(ctx, verify);
  }
  return verify;
}

/**
 * An agent's access token: verified (cached), then checked against the ledger on every
 * request. The token names the incarnation (ledger row) it was issued to, and only the
 * agent's active row is accepted, so a token of a revoked agent, or from before a
 * re-enrollment, is dead at once whatever its age. Every agent route needs the
 * `http-relay` capability of the grant; a dedicated `nats-relay` identity has none of them.
 */
export function requireAgent(ctx: RelayContext) {
  const verifyToken = verifierFor(ctx);
  return async (request: FastifyRequest): Promise<void> => {
    const token = bearerOf(request.headers.authorization);
    if (!token)
      throw new SvcError('missing_token', 'Send the access JWT as "Authorization: Bearer <token>" (svc auth token).');
    const claims = await verifyToken(token);
    if (claims.svc_deployment_id !== ctx.deployment.deploymentId)
      throw new SvcError('invalid_token', undefined, { detail: 'other deployment' });
    const row = ctx.ledger.activeAgent(claims.svc_tenant_id, claims.sub);
    if (!row || row.id !== claims.svc_incarnation_id || row.agent_number !== claims.svc_agent_number) {
      throw new SvcError('invalid_token', undefined, { detail: 'agent revoked or replaced' });
    }
    if (!row.capabilities.includes(HTTP_RELAY))
      throw new SvcError(
        'capability_required',
        "This agent's grant lacks the http-relay capability; ask the operator for a new grant with it.",
      );
    request.agent = { claims, row };
  };
}
