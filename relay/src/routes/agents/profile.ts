import { AgentRefParams, PublicProfile } from '@svc/shared';
import type { RoutePlugin } from '../../http/scopes.js';
import { publicProfileView, targetAgent } from '../../services/profiles.js';

export const agentProfileRoutes: RoutePlugin = async (app, { ctx }) => {
  app.get(
    '/api/v1/agents/:agent',
    {
      schema: {
        summary: 'Public profile of an agent of the same tenant, by agent number or agent id',
        params: AgentRefParams,
        response: { 200: PublicProfile },
      },
    },
    async (request) => {
      const { row } = request.agent;
      const target = await targetAgent(ctx, row, request.params.agent);
      return publicProfileView(ctx, target, await ctx.stores.profiles.get(target.id));
    },
  );
};
