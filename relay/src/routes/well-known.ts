import type { RelayContext } from '../context.js';
import type { TypedApp } from './types.js';

export function wellKnownRoutes(app: TypedApp, ctx: RelayContext): void {
  app.get('/.well-known/svc-deployment', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/jose').header('cache-control', 'public, max-age=300').send(ctx.deployment.document),
  );
}
