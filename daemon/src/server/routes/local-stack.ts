/**
 * The local stack's socket routes: the daemon supervises one nats-server child for this
 * home (`svc start --local-only`), stopped with the daemon or by `svc stop --local`.
 */
import type { FastifyInstance } from 'fastify';
import type { LocalStackStartInput, LocalStackStatus } from '../../client/api.js';
import { localStackFiles } from '../../client/local-stack/server-config.js';
import type { DaemonContext } from '../../context.js';
import { DaemonError } from '../../errors.js';
import { LocalStack } from '../../local-stack/supervisor.js';

const StartBody = {
  type: 'object',
  additionalProperties: false,
  required: ['local_only', 'port', 'monitor_port', 'listen'],
  properties: {
    local_only: { type: 'boolean' },
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    monitor_port: { type: 'integer', minimum: 1, maximum: 65535 },
    listen: { type: 'string', minLength: 1, maxLength: 255 },
  },
} as const;

export function localStackRoutes(app: FastifyInstance, ctx: DaemonContext): void {
  const stack = new LocalStack(localStackFiles(ctx.paths.runDir), ctx.log.child({ subsystem: 'daemon:local-stack' }));
  ctx.onClose(() => void stack.stop());

  app.get('/v1/local-stack', async (): Promise<LocalStackStatus> => stack.status());

  app.post<{ Body: LocalStackStartInput }>(
    '/v1/local-stack/start',
    { schema: { body: StartBody } },
    async (request): Promise<LocalStackStatus> => {
      const b = request.body;
      if (!b.local_only)
        throw new DaemonError(
          'local_stack_failed',
          'The leaf uplink to the hub is not built yet in this daemon; start with --local-only.',
          { status: 501 },
        );
      return stack.start({ listen: b.listen, port: b.port, monitorPort: b.monitor_port });
    },
  );

  app.post('/v1/local-stack/stop', async () => ({ stopped: await stack.stop() }));
}
