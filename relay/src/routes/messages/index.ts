import { Type } from '@sinclair/typebox';
import {
  AckResponse,
  ErrorResponse,
  MESSAGE_LIMITS,
  PendingQuery,
  PendingResponse,
  ReceiptsQuery,
  ReceiptsResponse,
  SendRequest,
  SendResponse,
} from '@svc/shared';
import type { RelayContext } from '../../context.js';
import { requireAgent } from '../../http/auth-hooks.js';
import { installSendBodyParser } from '../../messages/send-body.js';
import { Messaging } from '../../services/messages.js';
import type { TypedApp } from '../types.js';
import { messageStreamRoute } from './stream.js';

const errors = { '4xx': ErrorResponse, '5xx': ErrorResponse };
const security = [{ accessToken: [] }];

export function messageRoutes(app: TypedApp, ctx: RelayContext): Messaging {
  const messaging = new Messaging(ctx);
  const auth = requireAgent(ctx);
  const me = (request: { agent?: { row: import('../../ledger/ledger.js').AgentRow } }) =>
    (request.agent as NonNullable<typeof request.agent>).row;

  // The send route parses its body its own way: a scope of its own keeps that parser here.
  app.register(async (scope: TypedApp) => {
    installSendBodyParser(scope);
    scope.post(
      '/api/v1/messages',
      {
        onRequest: auth,
        // a full batch of maximal envelopes, plus the JSON around them
        bodyLimit: MESSAGE_LIMITS.maxEnvelopeBytes * 4 + 64 * 1024,
        schema: {
          summary: 'Send sealed envelopes, one per recipient; the message id is the idempotency key',
          security,
          body: SendRequest,
          response: { 202: SendResponse, ...errors },
        },
      },
      async (request, reply) => reply.status(202).send(await messaging.send(me(request), request.body)),
    );
  });

  app.get(
    '/api/v1/messages/pending',
    {
      onRequest: auth,
      schema: {
        summary: 'Pending envelopes addressed to you, oldest first; long-polls up to `wait` seconds (max 30)',
        security,
        querystring: PendingQuery,
        response: { 200: PendingResponse, ...errors },
      },
    },
    async (request) => {
      const q = request.query;
      const abort = new AbortController();
      request.raw.once('close', () => abort.abort());
      const signal = AbortSignal.any([abort.signal, messaging.closing]);
      return messaging.pending(me(request), {
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
      onRequest: auth,
      schema: {
        summary: 'Acknowledge a message: removes it from your pending inbox and gives the sender a receipt',
        security,
        params: Type.Object({ message_id: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: AckResponse, ...errors },
      },
    },
    async (request) => messaging.ack(me(request), request.params.message_id),
  );

  app.get(
    '/api/v1/receipts',
    {
      onRequest: auth,
      schema: {
        summary: 'Delivery receipts for messages you sent, after the `since` cursor',
        security,
        querystring: ReceiptsQuery,
        response: { 200: ReceiptsResponse, ...errors },
      },
    },
    async (request) =>
      messaging.receipts(me(request), Number(request.query.since ?? 0), Number(request.query.limit ?? 100)),
  );

  messageStreamRoute(app, ctx, messaging);
  // Held-open streams and long-polls would keep the server from closing: end them first.
  app.addHook('preClose', async () => messaging.shutdown());
  return messaging;
}
