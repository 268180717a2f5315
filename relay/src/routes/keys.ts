/** The key directory: PUT/GET /api/v1/agents/me/keys…, GET /api/v1/agents/{agent}/keys… (rules in services/keys.ts). */
import {
  KeyAgentParams,
  KeyAgentVersionParams,
  KeyDirectoryEntry,
  KeyRecord,
  KeyRecordEntry,
  KeyUploadRequest,
  KeyVersionParams,
} from '@svc/shared';
import type { RoutePlugin } from '../http/scopes.js';

export const keyRoutes: RoutePlugin = async (app, { ctx }) => {
  const keys = ctx.keys;

  app.put(
    '/api/v1/agents/me/keys',
    {
      schema: {
        summary: 'Upload the next version of your keys (self-signed; a new signing key also needs previous_signature)',
        body: KeyUploadRequest,
        response: { 200: KeyRecord, 201: KeyRecord },
      },
    },
    async (request, reply) => {
      const { status, record } = await keys.rotate(request.agent.row, request.body);
      return reply.status(status).send(record);
    },
  );

  app.get(
    '/api/v1/agents/me/keys',
    {
      schema: {
        summary: 'Your current keys and every earlier version, oldest first',
        response: { 200: KeyDirectoryEntry },
      },
    },
    async (request) => keys.entry(request.agent.row),
  );

  app.get(
    '/api/v1/agents/me/keys/:version',
    {
      schema: {
        summary: 'One version of your keys',
        params: KeyVersionParams,
        response: { 200: KeyRecordEntry },
      },
    },
    async (request) => keys.version(request.agent.row, request.params.version),
  );

  app.get(
    '/api/v1/agents/:agent/keys',
    {
      schema: {
        summary: "An agent's current keys and every earlier version (same tenant; by agent number or id)",
        params: KeyAgentParams,
        response: { 200: KeyDirectoryEntry },
      },
    },
    async (request) => keys.entry(await keys.lookup(request.agent.row.tenant_id, request.params.agent)),
  );

  app.get(
    '/api/v1/agents/:agent/keys/:version',
    {
      schema: {
        summary: "One version of an agent's keys (same tenant; by agent number or id)",
        params: KeyAgentVersionParams,
        response: { 200: KeyRecordEntry },
      },
    },
    async (request) =>
      keys.version(await keys.lookup(request.agent.row.tenant_id, request.params.agent), request.params.version),
  );
};
