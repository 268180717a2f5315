import type { RoutePlugin } from '../http/scopes.js';

export const wellKnownRoutes: RoutePlugin = async (app, { ctx }) => {
  app.get('/.well-known/svc-deployment', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/jose').header('cache-control', 'public, max-age=300').send(ctx.deployment.document),
  );
};
