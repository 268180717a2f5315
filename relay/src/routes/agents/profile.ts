import { AgentRefParams, ErrorResponse, PublicProfile } from '@svc/shared';
import type { RelayContext } from '../../context.js';
import { requireAgent } from '../../http/auth-hooks.js';
import { publicProfileView, targetAgent } from '../../services/profiles.js';
import type { TypedApp } from '../types.js';

export function agentProfileRoutes(app: TypedApp, ctx: RelayContext): void {
  app.get(
    '/api/v1/agents/:agent',
    {
      onRequest: requireAgent(ctx),
      schema: {
        summary: 'Public profile of an agent of the same tenant, by agent number or agent id',
        security: [{ accessToken: [] }],
        params: AgentRefParams,
        response: { 200: PublicProfile, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      return publicProfileView(ctx, targetAgent(ctx, row, request.params.agent));
    },
  );
}
