import { SelfRevoked, SvcError } from '@svc/shared';
import type { RoutePlugin } from '../../http/scopes.js';
import { cleanupIncarnation } from '../../services/revocation.js';

/**
 * POST /api/v1/agents/me/revoke: an agent revokes its own incarnation, exactly as the
 * operator's `svc-relay agent revoke` does (API keys, tokens and bus users stop working,
 * undelivered envelopes are purged), so a deregistered agent cannot be written to.
 */
export const agentRevokeRoutes: RoutePlugin = async (app, { ctx }) => {
  app.post(
    '/api/v1/agents/me/revoke',
    {
      schema: {
        summary: 'Revoke the calling agent (deregistration): its credentials stop working and it gets no more messages',
        response: { 200: SelfRevoked },
      },
    },
    async (request) => {
      const { row } = request.agent;
      const revoked = await ctx.ledger.revokeAgent(row.tenant_id, row.agent_id, ctx.now());
      // the agent scope just found it active; only a concurrent revocation gets here
      if (!revoked) throw new SvcError('invalid_token', undefined, { detail: 'agent revoked meanwhile' });
      ctx.messaging.agentRevoked(revoked);
      let pending = true;
      try {
        await cleanupIncarnation(ctx, revoked);
        pending = false;
      } catch {
        // stays pending: the relay's cleanup round finishes it (logged by cleanupIncarnation)
      }
      request.log.info(
        { agent_id: row.agent_id, tenant_id: row.tenant_id, cleanup_pending: pending },
        'agent revoked itself',
      );
      return {
        agent_id: revoked.agent_id,
        agent_number: revoked.agent_number,
        tenant_id: revoked.tenant_id,
        revoked_at: new Date(revoked.revoked_at as number).toISOString(),
        cleanup_pending: pending,
      };
    },
  );
};
