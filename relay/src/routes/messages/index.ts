import { Type } from '@sinclair/typebox';
import {
  AckResponse,
  MESSAGE_LIMITS,
  PendingQuery,
  PendingResponse,
  ReceiptsQuery,
  ReceiptsResponse,
  SendRequest,
  SendResponse,
} from '@svc/shared';
import type { RoutePlugin } from '../../http/scopes.js';
import { canonicalBytesOf, installSendBodyParser, sendBodyValidator } from '../../messages/send-body.js';
import { sendResponseJson } from '../../messages/send-response.js';
import type { TypedApp } from '../types.js';
import { messageStreamRoute } from './stream.js';

export const messageRoutes: RoutePlugin = async (app, { ctx }) => {
  const messaging = ctx.messaging;

  // The send route parses its body its own way: a scope of its own keeps that parser here.
  await app.register(async (scope: TypedApp) => {
    installSendBodyParser(scope);
    scope.post(
      '/api/v1/messages',
      {
        // a full batch of maximal envelopes, plus the JSON around them
        bodyLimit: MESSAGE_LIMITS.maxEnvelopeBytes * 4 + 64 * 1024,
        // a body the parser's fast path took was checked already
        validatorCompiler: sendBodyValidator(scope),
        // the answer is built by the service in exactly the schema's shape, of values that
        // need no escapes: written by concatenation (send-response.ts); an error answer is
        // of another shape
        serializerCompiler: ({ httpStatus }) =>
          httpStatus === '202' ? (data) => sendResponseJson(data as SendResponse) : (data) => JSON.stringify(data),
        schema: {
          summary: 'Send sealed envelopes, one per recipient; the message id is the idempotency key',
          body: SendRequest,
          response: { 202: SendResponse },
        },
      },
      async (request, reply) =>
        reply.status(202).send(await messaging.send(request.agent.row, request.body, canonicalBytesOf(request.body))),
    );
  });

  app.get(
    '/api/v1/messages/pending',
    {
      schema: {
        summary: 'Pending envelopes addressed to you, oldest first; long-polls up to `wait` seconds (max 30)',
        querystring: PendingQuery,
        response: { 200: PendingResponse },
      },
    },
    async (request) => {
      const q = request.query;
      const abort = new AbortController();
      request.raw.once('close', () => abort.abort());
      const signal = AbortSignal.any([abort.signal, messaging.closing]);
      return messaging.pending(request.agent.row, {
        after: Number(q.after ?? 0),
        limit: Number(q.limit ?? 50),
        waitMs: Number(q.wait ?? 0) * 1000,
        signal,
      });
    },
  );

  app.post(
    '/api/v1/messages/:message_id/ack',
    {
      schema: {
        summary: 'Acknowledge a message: removes it from your pending inbox and gives the sender a receipt',
        params: Type.Object({ message_id: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: AckResponse },
      },
    },
    async (request) => messaging.ack(request.agent.row, request.params.message_id),
  );

  app.get(
    '/api/v1/receipts',
    {
      schema: {
        summary: 'Delivery receipts for messages you sent, after the `since` cursor',
        querystring: ReceiptsQuery,
        response: { 200: ReceiptsResponse },
      },
    },
    async (request) =>
      messaging.receipts(request.agent.row, Number(request.query.since ?? 0), Number(request.query.limit ?? 100)),
  );

  messageStreamRoute(app, {
    messaging,
    ledger: ctx.ledger,
    now: ctx.now,
  });
};
