/** Block and mute: POST/DELETE /api/v1/agents/{agent}/block|mute, GET /api/v1/agents/me/blocked|muted. */
import { Type } from '@sinclair/typebox';
import { AgentRefParams, BlockedList, ErrorResponse, MutedList, RelationEntry, SvcError } from '@svc/shared';
import type { RelayContext } from '../../context.js';
import { requireAgent } from '../../http/auth-hooks.js';
import { findActiveAgent } from '../../ledger/profiles.js';
import { addRelation, listRelations, type Relation, relationTargetByRef, removeRelation } from '../../ledger/social.js';
import { targetAgent } from '../../services/profiles.js';
import type { TypedApp } from '../types.js';

const iso = (ms: number) => new Date(ms).toISOString();

export function agentRelationRoutes(app: TypedApp, ctx: RelayContext): void {
  for (const relation of ['block', 'mute'] as const satisfies readonly Relation[]) {
    const verb = relation === 'block' ? 'Block' : 'Mute';
    app.post(
      `/api/v1/agents/:agent/${relation}`,
      {
        onRequest: requireAgent(ctx),
        schema: {
          summary:
            relation === 'block'
              ? 'Block an agent of the same tenant: its messages to the caller are refused (idempotent)'
              : 'Mute an agent of the same tenant: its messages arrive without notification (idempotent)',
          security: [{ accessToken: [] }],
          params: AgentRefParams,
          response: { 200: RelationEntry, '4xx': ErrorResponse, '5xx': ErrorResponse },
        },
      },
      async (request) => {
        const { row } = request.agent as NonNullable<typeof request.agent>;
        const target = targetAgent(ctx, row, request.params.agent);
        if (target.agent_id === row.agent_id)
          throw new SvcError('cannot_target_self', `An agent cannot ${relation} itself.`);
        const since = addRelation(ctx.ledger, relation, row.tenant_id, row.agent_id, target, ctx.now());
        request.log.info({ agent_id: row.agent_id, target: target.agent_id }, `${relation} added`);
        return {
          agent_id: target.agent_id,
          agent_number: target.agent_number,
          display_name: target.display_name,
          since: iso(since),
        };
      },
    );

    app.delete(
      `/api/v1/agents/:agent/${relation}`,
      {
        onRequest: requireAgent(ctx),
        schema: {
          summary: `${verb === 'Block' ? 'Unblock' : 'Unmute'} an agent (idempotent; 404 only for an unknown agent)`,
          security: [{ accessToken: [] }],
          params: AgentRefParams,
          response: { 204: Type.Null(), '4xx': ErrorResponse, '5xx': ErrorResponse },
        },
      },
      async (request, reply) => {
        const { row } = request.agent as NonNullable<typeof request.agent>;
        const ref = request.params.agent;
        // A target that is no longer enrolled can still be lifted by the id or number recorded with it.
        const targetId =
          findActiveAgent(ctx.ledger, row.tenant_id, ref)?.agent_id ??
          relationTargetByRef(ctx.ledger, relation, row.tenant_id, row.agent_id, ref);
        if (targetId === undefined) throw new SvcError('not_found', `No agent ${JSON.stringify(ref)} in your tenant.`);
        if (targetId === row.agent_id) throw new SvcError('cannot_target_self', `An agent cannot ${relation} itself.`);
        removeRelation(ctx.ledger, relation, row.tenant_id, row.agent_id, targetId);
        return reply.status(204).send(null);
      },
    );
  }

  const listRoute = (relation: Relation) =>
    ({
      onRequest: requireAgent(ctx),
      schema: {
        summary: relation === 'block' ? 'Agents the caller blocked' : 'Agents the caller muted',
        security: [{ accessToken: [] }],
        response: {
          200: relation === 'block' ? BlockedList : MutedList,
          '4xx': ErrorResponse,
          '5xx': ErrorResponse,
        },
      },
    }) as const;

  const entries = (relation: Relation, tenantId: string, agentId: string) =>
    listRelations(ctx.ledger, relation, tenantId, agentId).map((r) => ({ ...r, since: iso(r.since) }));

  app.get('/api/v1/agents/me/blocked', listRoute('block'), async (request) => {
    const { row } = request.agent as NonNullable<typeof request.agent>;
    return { blocked: entries('block', row.tenant_id, row.agent_id) };
  });
  app.get('/api/v1/agents/me/muted', listRoute('mute'), async (request) => {
    const { row } = request.agent as NonNullable<typeof request.agent>;
    return { muted: entries('mute', row.tenant_id, row.agent_id) };
  });
}
