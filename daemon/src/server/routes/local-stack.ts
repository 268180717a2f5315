/**
 * The local stack's socket routes: the daemon supervises one nats-server child for this
 * home (`svc start [--local-only]`), stopped with the daemon or by `svc stop --local`.
 */
import type { FastifyInstance } from 'fastify';
import type { LocalStackStartInput, LocalStackStatus } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';

const StartBody = {
  type: 'object',
  additionalProperties: false,
  required: ['local_only', 'port', 'monitor_port', 'listen'],
  properties: {
    local_only: { type: 'boolean' },
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    monitor_port: { type: 'integer', minimum: 1, maximum: 65535 },
    as: { type: 'string', minLength: 1, maxLength: 256 },
    listen: { type: 'string', minLength: 1, maxLength: 255 },
  },
} as const;

export function localStackRoutes(app: FastifyInstance, ctx: DaemonContext): void {
  const stack = ctx.localStack;
  app.get('/v1/local-stack', async (): Promise<LocalStackStatus> => stack.status());

  app.post<{ Body: LocalStackStartInput }>(
    '/v1/local-stack/start',
    { schema: { body: StartBody } },
    async (request): Promise<LocalStackStatus> => stack.start(request.body),
  );

  app.post('/v1/local-stack/stop', async () => ({ stopped: await stack.stop() }));
}
