import { ErrorResponse, HeartbeatRequest, HeartbeatResponse } from '@svc/shared';
import type { RelayContext } from '../../context.js';
import { requireAgent } from '../../http/auth-hooks.js';
import { recordHeartbeat } from '../../ledger/profiles.js';
import { cleanText, presenceView } from '../../services/profiles.js';
import type { TypedApp } from '../types.js';

export function agentHeartbeatRoutes(app: TypedApp, ctx: RelayContext): void {
  app.post(
    '/api/v1/agents/me/heartbeat',
    {
      onRequest: requireAgent(ctx),
      // The body is optional: a bare POST is a heartbeat too.
      preValidation: async (request) => {
        if (request.body === undefined || request.body === null) request.body = {};
      },
      schema: {
        summary: 'Record that the calling agent is present; optionally set its presence status and text',
        security: [{ accessToken: [] }],
        body: HeartbeatRequest,
        response: { 200: HeartbeatResponse, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      const changes: { presence_status?: string | null; status_text?: string | null } = {};
      const status = cleanText(request.body.status);
      if (status !== undefined) changes.presence_status = status;
      const statusText = cleanText(request.body.status_text);
      if (statusText !== undefined) changes.status_text = statusText;
      const now = ctx.now();
      return presenceView(recordHeartbeat(ctx.ledger, row.id, now, changes), now);
    },
  );
}
