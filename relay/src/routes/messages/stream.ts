/**
 * GET /api/v1/messages/stream: server-sent events. First the pending backlog, then each
 * new envelope as it arrives (`event: envelope`, `id:` = the inbox cursor, so a client
 * resumes with Last-Event-ID). A comment line every 15 s keeps proxies from closing it.
 */
import { Type } from '@sinclair/typebox';
import type { Messaging } from '../../services/messages.js';
import type { TypedApp } from '../types.js';

const KEEPALIVE_MS = 15_000;

export function messageStreamRoute(app: TypedApp, messaging: Messaging): void {
  app.get(
    '/api/v1/messages/stream',
    {
      schema: {
        summary: 'Server-sent events of envelopes addressed to you (backlog first)',
        querystring: Type.Object(
          { after: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })) },
          { additionalProperties: false },
        ),
        headers: Type.Object({ 'last-event-id': Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })) }),
      },
    },
    async (request, reply) => {
      const agent = request.agent.row;
      let cursor = Number(request.headers['last-event-id'] ?? request.query.after ?? 0);
      const abort = new AbortController();
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-request-id': request.id,
      });
      raw.on('close', () => abort.abort());
      messaging.closing.addEventListener('abort', () => abort.abort(), { once: true, signal: abort.signal });
      raw.write(': svc message stream\n\n');
      try {
        while (!abort.signal.aborted) {
          const page = await messaging.pending(agent, {
            after: cursor,
            limit: 100,
            waitMs: KEEPALIVE_MS,
            signal: abort.signal,
          });
          if (abort.signal.aborted) break;
          if (page.envelopes.length === 0) {
            raw.write(': keepalive\n\n');
            continue;
          }
          for (const item of page.envelopes) {
            raw.write(`id: ${item.cursor}\nevent: envelope\ndata: ${JSON.stringify(item)}\n\n`);
            cursor = item.cursor;
          }
        }
      } catch (err) {
        request.log.warn({ err: (err as Error).message }, 'message stream ended by an error');
        if (!raw.writableEnded)
          raw.write(
            `event: error\ndata: ${JSON.stringify({ error: 'stream_interrupted', message: 'The stream was interrupted; reconnect with Last-Event-ID.' })}\n\n`,
          );
      } finally {
        if (!raw.writableEnded) raw.end();
      }
    },
  );
}
