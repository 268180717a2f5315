import { Type } from '@sinclair/typebox';
import { Capability, ErrorResponse } from '@svc/shared';
import type { RelayContext } from '../../context.js';
import { requireAgent } from '../../http/auth-hooks.js';
import type { TypedApp } from '../types.js';

const Profile = Type.Object({
  agent_id: Type.String(),
  agent_number: Type.String(),
  tenant_id: Type.String(),
  deployment_id: Type.String(),
  capabilities: Type.Array(Capability),
  display_name: Type.Union([Type.String(), Type.Null()]),
  description: Type.Union([Type.String(), Type.Null()]),
  discoverable: Type.Boolean(),
  enrolled_at: Type.String({ format: 'date-time' }),
});

export function agentMeRoutes(app: TypedApp, ctx: RelayContext): void {
  app.get(
    '/api/v1/agents/me',
    {
      onRequest: requireAgent(ctx),
      schema: {
        summary: "The calling agent's own profile",
        security: [{ accessToken: [] }],
        response: { 200: Profile, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      return {
        agent_id: row.agent_id,
        agent_number: row.agent_number,
        tenant_id: row.tenant_id,
        deployment_id: ctx.deployment.deploymentId,
        capabilities: row.capabilities,
        display_name: row.display_name,
        description: row.description,
        discoverable: row.discoverable,
        enrolled_at: new Date(row.created_at).toISOString(),
      };
    },
  );
}
