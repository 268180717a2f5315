/**
 * The HTTP application, built apart from `listen` so tests can use `app.inject()`.
 * Plugins and routes are registered in a fixed order.
 */
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { SvcError, validationMessage } from '@svc/shared';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { RelayContext } from './context.js';
import { installAuthRateLimits } from './http/auth-rate-limits.js';
import { clientErrorHandler, frameworkErrors, installErrorHandling } from './http/error-handler.js';
import { installJsonBodyParser } from './http/json-body.js';
import { installOptionalBodies } from './http/optional-body.js';
import { installProtocolListeners, PROTOCOL_SERVER_OPTIONS, refuseUnservedProtocol } from './http/protocol.js';
import { adminScope, agentScope, edgeScope, publicScope } from './http/scopes.js';
import { installStorableTextPolicy } from './http/storable-text.js';
import { enrollmentGrantRoutes } from './routes/admin/enrollment-grants.js';
import { agentHeartbeatRoutes } from './routes/agents/heartbeat.js';
import { agentMeRoutes } from './routes/agents/me.js';
import { agentProfileRoutes } from './routes/agents/profile.js';
import { agentRelationRoutes } from './routes/agents/relations.js';
import { agentReportRoutes } from './routes/agents/report.js';
import { agentRevokeRoutes } from './routes/agents/revoke.js';
import { signInRoutes } from './routes/auth/sign-in.js';
import { blobRoutes } from './routes/blobs.js';
import { contactRoutes } from './routes/contacts.js';
import { enrollmentRoutes } from './routes/enrollment.js';
import { healthRoutes } from './routes/health.js';
import { keyRoutes } from './routes/keys.js';
import { messageRoutes } from './routes/messages/index.js';
import { edgeRoutes } from './routes/nats.js';
import type { TypedApp } from './routes/types.js';
import { wellKnownRoutes } from './routes/well-known.js';

export const RELAY_VERSION = '0.1.0';
/** How long a request (headers and body) may take to arrive. */
export const REQUEST_TIMEOUT_MS = 300_000;

export async function buildApp(ctx: RelayContext, opts: { requestTimeoutMs?: number } = {}): Promise<TypedApp> {
  const requestTimeout = opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const app = Fastify({
    loggerInstance: ctx.logger.child({ subsystem: 'relay:http' }) as FastifyBaseLogger,
    genReqId: () => randomUUID(),
    bodyLimit: 1024 * 1024,
    // A request must arrive whole within this (Node's default is never): a client that
    // stalls mid-body no longer holds its connection for ever. Long enough for the largest
    // attachment on a slow link; the answer (a stream, a long-poll) is not counted.
    requestTimeout,
    // how often Node looks for such requests (its default, 30 s, unless the timeout is shorter);
    // Node enforces the timeout only when the headers' own (default 60 s) is not longer
    http: {
      connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(requestTimeout / 10))),
      headersTimeout: Math.min(60_000, requestTimeout),
      ...PROTOCOL_SERVER_OPTIONS,
    },
    // Wrong types are errors, not silently coerced; unknown fields are refused by the schemas.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true } },
    // a refused request says which field, where and what is wrong, in words
    schemaErrorFormatter: (errors, dataVar) => new Error(validationMessage(errors, dataVar)),
    // Every error answer has the one shape, including the router's and Node's HTTP parser's.
    frameworkErrors,
    clientErrorHandler,
    // the schemas bound each path parameter (agent numbers 128, agent ids 256, percent-encoded
    // longer); the router's default of 100 answered 414 for valid ones, so a peer with a long
    // agent number had no key record anyone could look up
    routerOptions: { maxParamLength: 1024 },
    // request.ip (what the rate limits count) is the client behind a trusted proxy only
    trustProxy: ctx.config.trustedProxies.length > 0 ? ctx.config.trustedProxies : false,
  }).withTypeProvider<TypeBoxTypeProvider>();

  installProtocolListeners(app.server);
  installErrorHandling(app);
  installJsonBodyParser(app);
  installStorableTextPolicy(app);
  const markOptionalBodies = installOptionalBodies(app);
  app.addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
    // Shutting down: server.close() closed the connections idle at that moment and waits for
    // the others. A long-poll that ends later (after a ledger round trip on PostgreSQL) must
    // not leave its connection open until the keep-alive timeout.
    if (ctx.messaging.closing.aborted) void reply.header('connection', 'close');
  });
  installAuthRateLimits(app, ctx);
  // A client that went away while the request's hooks ran (an authentication round trip on a
  // busy ledger) has closed its socket before the body is read: reading it would wait for
  // ever (and keep the server from closing), so the request ends here.
  app.addHook('preParsing', async (request) => {
    if (request.raw.destroyed)
      throw new SvcError('bad_request', 'The client closed the connection before its body was read.');
  });
  // Every API route needs the ledger; when it is closed, say so up front (503 ledger_closed).
  // Before that, what the relay does not serve (no Host, an Expect, a compressed body).
  app.addHook('onRequest', async (request) => {
    refuseUnservedProtocol(request);
    if (request.url.startsWith('/api/') && request.url !== '/api/v1/openapi.json') ctx.ledger.assertOpen();
  });

  await app.register(swagger, {
    transformObject: (d) => markOptionalBodies('openapiObject' in d ? d.openapiObject : d.swaggerObject),
    openapi: {
      openapi: '3.1.0',
      info: { title: 'svc relay API', version: RELAY_VERSION },
      servers: [{ url: ctx.config.publicUrl }],
      components: {
        securitySchemes: {
          oidc: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'OIDC access token of the configured authority',
          },
          apiKey: { type: 'http', scheme: 'bearer', description: 'svc_ak_… API key' },
          accessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'relay-issued access JWT' },
        },
      },
    },
  });

  await app.register(healthRoutes, { ctx });
  await app.register(wellKnownRoutes, { ctx });
  await app.register(publicScope, { ctx, routes: [enrollmentRoutes, signInRoutes] });
  await app.register(adminScope, { ctx, routes: [enrollmentGrantRoutes] });
  await app.register(agentScope, {
    ctx,
    routes: [
      agentMeRoutes,
      keyRoutes,
      agentHeartbeatRoutes,
      agentProfileRoutes,
      agentRelationRoutes,
      agentReportRoutes,
      agentRevokeRoutes,
      contactRoutes,
      messageRoutes,
      blobRoutes,
    ],
  });
  await app.register(edgeScope, { ctx, routes: [edgeRoutes] });
  // Held-open streams and long-polls would keep the server from closing: end them first.
  app.addHook('preClose', async () => ctx.messaging.shutdown());
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  return app;
}
