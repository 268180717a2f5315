/** Bearer checks run as onRequest hooks, before the body is parsed or validated. */
import { type AccessTokenClaims, SvcError } from '@svc/shared';
import type { FastifyRequest } from 'fastify';
import type { AdminPrincipal } from '../auth/admin-token.js';
import { accessTokenVerifier, bearerOf } from '../auth/agent-credentials.js';
import type { RelayContext } from '../context.js';
import type { AgentRow } from '../ledger/ledger.js';

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
    // A token from before the current incarnation (revoked, then re-enrolled) is dead.
    if (!row || row.agent_number !== claims.svc_agent_number || claims.iat * 1000 < row.created_at - 1000) {
      throw new SvcError('invalid_token', undefined, { detail: 'agent revoked or replaced' });
    }
    request.agent = { claims, row };
  };
}
