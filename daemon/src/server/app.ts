/**
 * The socket API as a Fastify app (built apart from listening, so tests can inject).
 * Every failure answers `{error, message}` with the code's status.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { validationMessage } from '@svc/shared';
import Fastify, { type FastifyBaseLogger, type FastifyError, LogController } from 'fastify';
import type { DaemonContext } from '../context.js';
import { BODY_TOO_LARGE, DaemonError, RelayError } from '../errors.js';
import { agentRoutes } from './routes/agents.js';
import { conversationRoutes } from './routes/conversations.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { deploymentRoutes } from './routes/deployments.js';
import { eventRoutes } from './routes/events.js';
import { localStackRoutes } from './routes/local-stack.js';
import { messageRoutes } from './routes/messages.js';
import { relayRoutes } from './routes/relay.js';
import type { DaemonApp } from './routes/route.js';
import { statusRoutes } from './routes/status.js';

export function buildApp(ctx: DaemonContext): DaemonApp {
  const app: DaemonApp = Fastify({
    loggerInstance: ctx.log.child({ subsystem: 'daemon:http' }) as FastifyBaseLogger,
    bodyLimit: 2 * 1024 * 1024,
    // the default request log carries query strings (search terms): log our own line instead
    logController: new LogController({ disableRequestLogging: true }),
    // the schemas bound each parameter (agent numbers 128, conversation ids 256, encoded up
    // to three times longer); the router's own default of 100 refused valid ones with a 414
    routerOptions: { maxParamLength: 1024 },
    // a refused request says which field, where, and what is wrong, in words
    schemaErrorFormatter: (errors, dataVar) => new Error(validationMessage(errors, dataVar)),
  }).withTypeProvider<TypeBoxTypeProvider>();
  // answer schemas type the handlers (client/api.ts); answers are sent as the handlers made
  // them, not filtered through the schema, so a field added to a model is never dropped silently
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        path: request.url.split('?')[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof DaemonError) {
      if (err.status >= 500) request.log.error({ err: err.message, code: err.code }, 'request failed');
      // a relay refusal travels with the relay's own code, even one this build does not know
      const code = err instanceof RelayError ? err.relayErrorCode : err.code;
      return reply.status(err.status).send({ error: code, message: err.message });
    }
    if (err.validation) {
      return reply.status(400).send({ error: 'validation_failed', message: err.message });
    }
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.status(413).send(BODY_TOO_LARGE);
    }
    if (err.statusCode && err.statusCode < 500) {
      const code = err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'unsupported_media_type' : 'bad_request';
      return reply.status(err.statusCode).send({ error: code, message: err.message });
    }
    request.log.error({ err }, 'unexpected failure');
    return reply.status(500).send({ error: 'internal_error', message: 'The daemon failed unexpectedly; see its log.' });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send({ error: 'not_found', message: `No route ${request.method} ${request.url}.` }),
  );
  statusRoutes(app, ctx);
  deploymentRoutes(app, ctx);
  agentRoutes(app, ctx);
  messageRoutes(app, ctx);
  conversationRoutes(app, ctx);
  eventRoutes(app, ctx);
  dashboardRoutes(app, ctx);
  localStackRoutes(app, ctx);
  relayRoutes(app, ctx);
  return app;
}
