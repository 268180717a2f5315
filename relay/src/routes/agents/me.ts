import { ErrorResponse, OwnProfile, ProfileUpdate } from '@svc/shared';
import type { RelayContext } from '../../context.js';
import { requireAgent } from '../../http/auth-hooks.js';
import { applyProfileUpdate, checkProfileUpdate, ownProfileView } from '../../services/profiles.js';
import type { TypedApp } from '../types.js';

export function agentMeRoutes(app: TypedApp, ctx: RelayContext): void {
  app.get(
    '/api/v1/agents/me',
    {
      onRequest: requireAgent(ctx),
      schema: {
        summary: "The calling agent's own profile",
        security: [{ accessToken: [] }],
        response: { 200: OwnProfile, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      return ownProfileView(ctx, row);
    },
  );

  app.patch(
    '/api/v1/agents/me',
    {
      onRequest: requireAgent(ctx),
      schema: {
        summary: "Update the calling agent's profile and webhook endpoint",
        description:
          'Any subset of the fields. The first endpoint_url generates a webhook secret, returned here once as ' +
          'webhook_secret; changing the URL later keeps the secret; null or blank clears the URL and the secret, ' +
          'and the next URL gets a new one.',
        security: [{ accessToken: [] }],
        body: ProfileUpdate,
        response: { 200: OwnProfile, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      const changes = await checkProfileUpdate(request.body, { allowPrivate: ctx.config.allowPrivateWebhooks });
      const profile = applyProfileUpdate(ctx, row, changes);
      request.log.info(
        { agent_id: row.agent_id, fields: Object.keys(changes), webhook_secret_generated: 'webhook_secret' in profile },
        'profile updated',
      );
      return profile;
    },
  );
}
