/**
 * The edge machine's routes (scope: an identity holding `nats-relay`): its leaf uplink
 * credentials, and claiming and releasing named sources.
 */
import { Type } from '@sinclair/typebox';
import { AgentRefParams, NamedSource, SourceClaim, UplinkCreds } from '@svc/shared';
import type { RoutePlugin } from '../http/scopes.js';
import { issueUplinkCreds } from '../services/leaf-creds.js';
import { targetAgent } from '../services/profiles.js';
import { claimSource, releaseSource } from '../services/sources.js';

export const edgeRoutes: RoutePlugin = async (app, { ctx }) => {
  app.post(
    '/api/v1/nats/issue-leaf-creds',
    {
      config: { optionalBody: true },
      schema: {
        summary: "relay-uplink/v1 credentials for this edge's leaf node (each call rotates: earlier ones are revoked)",
        body: Type.Object({}, { additionalProperties: false }),
        response: { 200: UplinkCreds },
      },
    },
    async (request) => issueUplinkCreds(ctx, request.agent.row),
  );

  app.post(
    '/api/v1/sources',
    {
      schema: {
        summary: 'Claim an agent of the tenant as a named source of this edge (one durable consumer)',
        body: SourceClaim,
        response: { 200: NamedSource },
      },
    },
    async (request) => {
      const edge = request.agent.row;
      const { agent, issued_at, proof } = request.body;
      return claimSource(ctx, edge, await targetAgent(ctx, edge, agent), { issued_at, proof });
    },
  );

  app.delete(
    '/api/v1/sources/:agent',
    {
      schema: {
        summary: "Release this edge's named source of an agent (its consumer is deleted)",
        params: AgentRefParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      const edge = request.agent.row;
      const ref = request.params.agent;
      // a revoked agent's source is released by its revocation; the ref may also be a number
      const agent = await ctx.stores.profiles.findActiveAgent(edge.tenant_id, ref);
      await releaseSource(ctx, edge, agent?.agent_number ?? ref);
      return reply.status(204).send(null);
    },
  );
};
