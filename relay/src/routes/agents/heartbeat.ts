import { HeartbeatRequest, HeartbeatResponse } from '@svc/shared';
import type { RoutePlugin } from '../../http/scopes.js';
import { cleanText, presenceView } from '../../services/profiles.js';

export const agentHeartbeatRoutes: RoutePlugin = async (app, { ctx }) => {
  app.post(
    '/api/v1/agents/me/heartbeat',
    {
      // A bare POST is a heartbeat too.
      config: { optionalBody: true },
      schema: {
        summary: 'Record that the calling agent is present; optionally set its presence status and text',
        body: HeartbeatRequest,
        response: { 200: HeartbeatResponse },
      },
    },
    async (request) => {
      const { row } = request.agent;
      const changes: { presence_status?: string | null; status_text?: string | null } = {};
      const status = cleanText(request.body.status);
      if (status !== undefined) changes.presence_status = status;
      const statusText = cleanText(request.body.status_text);
      if (statusText !== undefined) changes.status_text = statusText;
      const now = ctx.now();
      return presenceView(await ctx.stores.profiles.recordHeartbeat(row.id, now, changes), now);
    },
  );
};
