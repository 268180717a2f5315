/** Block and mute: POST/DELETE /api/v1/agents/{agent}/block|mute, GET /api/v1/agents/me/blocked|muted. */
import { Type } from '@sinclair/typebox';
import { AgentRefParams, BlockedList, MutedList, RelationEntry, SvcError } from '@svc/shared';
import type { RoutePlugin } from '../../http/scopes.js';
import type { Relation } from '../../ledger/relations.js';
import { targetAgent } from '../../services/profiles.js';

const iso = (ms: number) => new Date(ms).toISOString();

export const agentRelationRoutes: RoutePlugin = async (app, { ctx }) => {
  for (const relation of ['block', 'mute'] as const satisfies readonly Relation[]) {
    const verb = relation === 'block' ? 'Block' : 'Mute';
    app.post(
      `/api/v1/agents/:agent/${relation}`,
      {
        schema: {
          summary:
            relation === 'block'
              ? 'Block an agent of the same tenant: its messages to the caller are refused (idempotent)'
              : 'Mute an agent of the same tenant: its messages arrive without notification (idempotent)',
          params: AgentRefParams,
          response: { 200: RelationEntry },
        },
      },
      async (request) => {
        const { row } = request.agent;
        const target = await targetAgent(ctx, row, request.params.agent);
        if (target.agent_id === row.agent_id)
          throw new SvcError('cannot_target_self', `An agent cannot ${relation} itself.`);
        const since = await ctx.stores.relations.add(relation, row.tenant_id, row.agent_id, target, ctx.now());
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
        schema: {
          summary: `${verb === 'Block' ? 'Unblock' : 'Unmute'} an agent (idempotent; 404 only for an unknown agent)`,
          params: AgentRefParams,
          response: { 204: Type.Null() },
        },
      },
      async (request, reply) => {
        const { row } = request.agent;
        const ref = request.params.agent;
        // A target that is no longer enrolled can still be lifted by the id or number recorded with it.
        const targetId =
          (await ctx.stores.profiles.findActiveAgent(row.tenant_id, ref))?.agent_id ??
          (await ctx.stores.relations.targetByRef(relation, row.tenant_id, row.agent_id, ref));
        if (targetId === undefined) throw new SvcError('not_found', `No agent ${JSON.stringify(ref)} in your tenant.`);
        if (targetId === row.agent_id) throw new SvcError('cannot_target_self', `An agent cannot ${relation} itself.`);
        await ctx.stores.relations.remove(relation, row.tenant_id, row.agent_id, targetId);
        return reply.status(204).send(null);
      },
    );
  }

  const listRoute = (relation: Relation) =>
    ({
      schema: {
        summary: relation === 'block' ? 'Agents the caller blocked' : 'Agents the caller muted',
        response: { 200: relation === 'block' ? BlockedList : MutedList },
      },
    }) as const;

  const entries = async (relation: Relation, tenantId: string, agentId: string) =>
    (await ctx.stores.relations.list(relation, tenantId, agentId)).map((r) => ({ ...r, since: iso(r.since) }));

  app.get('/api/v1/agents/me/blocked', listRoute('block'), async (request) => {
    const { row } = request.agent;
    return { blocked: await entries('block', row.tenant_id, row.agent_id) };
  });
  app.get('/api/v1/agents/me/muted', listRoute('mute'), async (request) => {
    const { row } = request.agent;
    return { muted: await entries('mute', row.tenant_id, row.agent_id) };
  });
};
