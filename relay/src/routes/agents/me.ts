import { OwnProfile, ProfileUpdate } from '@svc/shared';
import type { RoutePlugin } from '../../http/scopes.js';
import { applyProfileUpdate, checkProfileUpdate, ownProfileView } from '../../services/profiles.js';

export const agentMeRoutes: RoutePlugin = async (app, { ctx }) => {
  app.get(
    '/api/v1/agents/me',
    {
      schema: {
        summary: "The calling agent's own profile",
        response: { 200: OwnProfile },
      },
    },
    async (request) => {
      const { row } = request.agent;
      return ownProfileView(ctx, row, await ctx.stores.profiles.get(row.id));
    },
  );

  app.patch(
    '/api/v1/agents/me',
    {
      schema: {
        summary: "Update the calling agent's profile and webhook endpoint",
        description:
          'Any subset of the fields. The first endpoint_url generates a webhook secret, returned here once as ' +
          'webhook_secret; changing the URL later keeps the secret; null or blank clears the URL and the secret, ' +
          'and the next URL gets a new one.',
        body: ProfileUpdate,
        response: { 200: OwnProfile },
      },
    },
    async (request) => {
      const { row } = request.agent;
      const changes = await checkProfileUpdate(request.body, { allowPrivate: ctx.config.allowPrivateWebhooks });
      const profile = await applyProfileUpdate(ctx, row, changes);
      request.log.info(
        { agent_id: row.agent_id, fields: Object.keys(changes), webhook_secret_generated: 'webhook_secret' in profile },
        'profile updated',
      );
      return profile;
    },
  );
};
