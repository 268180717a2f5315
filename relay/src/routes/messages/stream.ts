/**
 * GET /api/v1/messages/stream: server-sent events. First the pending backlog, then each
 * new envelope as it arrives (`event: envelope`, `id:` = the inbox cursor, so a client
 * resumes with Last-Event-ID). A comment line every 15 s keeps proxies from closing it.
 * An envelope recorded after envelopes with higher cursors (another relay instance, a
 * retried send) is still sent, once, on an open stream (DeliveredWindow); its `id:` may
 * then be lower than the last one.
 */
import { Type } from '@sinclair/typebox';
import { SvcError } from '@svc/shared';
import { DUPLICATE_WINDOW_MS } from '../../bus/index.js';
import { DeliveredWindow } from '../../messages/delivered-window.js';
import type { Messaging } from '../../services/messages.js';
import type { TypedApp } from '../types.js';

const KEEPALIVE_MS = 15_000;
const BUS_RETRY_MS = 500;
/**
 * How long a lower stream sequence may still be recorded after a higher one: JetStream's
 * dedupe window (a retried send lands on its first sequence within it) and some slack.
 */
const LATE_RECORD_GRACE_MS = DUPLICATE_WINDOW_MS + 30_000;

const abortableDelay = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

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
      const window = new DeliveredWindow(cursor, LATE_RECORD_GRACE_MS);
      try {
        while (!abort.signal.aborted) {
          let page: Awaited<ReturnType<Messaging['pending']>>;
          try {
            page = await messaging.pending(agent, {
              after: cursor,
              limit: 100,
              waitMs: KEEPALIVE_MS,
              signal: abort.signal,
              window,
            });
          } catch (err) {
            // NATS failing over (a node lost, a stream leader re-elected): the stream stays
            // open and reads again shortly instead of making every client reconnect
            if (!(err instanceof SvcError && err.code === 'bus_unavailable')) throw err;
            request.log.warn({ err: err.message }, 'message stream: the bus is unavailable; reading again');
            raw.write(': keepalive\n\n');
            await abortableDelay(BUS_RETRY_MS, abort.signal);
            continue;
          }
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
        // Ended by the shutdown: the connection goes too (it was announced keep-alive, and
        // the server waits for every connection before it closes).
        const closeConnection = () => {
          if (messaging.closing.aborted) request.raw.socket?.end();
        };
        if (raw.writableEnded) closeConnection();
        else raw.end(closeConnection);
      }
    },
  );
}
