/**
 * GET /api/v1/messages/stream: server-sent events. First the pending backlog, then each
 * new envelope as it arrives (`event: envelope`, `id:` = the inbox cursor, so a client
 * resumes with Last-Event-ID). A comment line every 15 s keeps proxies from closing it.
 * An envelope recorded after envelopes with higher cursors (another relay instance, a
 * retried send) is still sent, once, on an open stream (DeliveredWindow); its `id:` may
 * then be lower than the last one. The writing itself (backpressure, keepalives, the end of
 * a revoked agent's stream, the end of one whose access token expired) is in
 * messages/message-stream.ts.
 */
import { Type } from '@sinclair/typebox';
import { SvcError } from '@svc/shared';
import { DUPLICATE_WINDOW_MS } from '../../bus/index.js';
import type { Ledger } from '../../ledger/ledger.js';
import { DeliveredWindow } from '../../messages/delivered-window.js';
import { runMessageStream } from '../../messages/message-stream.js';
import type { Messaging } from '../../services/messages.js';
import type { TypedApp } from '../types.js';

/**
 * How long a lower stream sequence may still be recorded after a higher one: JetStream's
 * dedupe window (a retried send lands on its first sequence within it) and some slack.
 */
const LATE_RECORD_GRACE_MS = DUPLICATE_WINDOW_MS + 30_000;
const PAGE_SIZE = 100;
/**
 * A page also stops at this many envelope bytes: a reader that stops reading keeps one page
 * in the relay's memory per stream (100 envelopes of 256 KiB would be 25 MiB).
 */
const PAGE_BYTES = 1024 * 1024;

const errorEvent = (err: SvcError | { error: string; message: string }): string =>
  `event: error\ndata: ${JSON.stringify(err)}\n\n`;

export interface MessageStreamDeps {
  messaging: Messaging;
  ledger: Pick<Ledger, 'activeAgent'>;
  /** the clock the access tokens are checked on */
  now: () => number;
}

export function messageStreamRoute(app: TypedApp, { messaging, ledger, now }: MessageStreamDeps): void {
  app.get(
    '/api/v1/messages/stream',
    {
      // HEAD would open a stream whose body is never sent: it held a stream slot for as long
      // as the client waited (405 instead, as for any method a path does not serve)
      exposeHeadRoute: false,
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
      // before anything is written: a refusal is an ordinary error answer (429 too_many_streams)
      const rechecks = new EventTarget();
      const release = messaging.streams.take(agent.id, () => rechecks.dispatchEvent(new Event('recheck')));
      const abort = new AbortController();
      const raw = reply.raw;
      let refused = false;
      try {
        const after = Number(request.headers['last-event-id'] ?? request.query.after ?? 0);
        reply.hijack();
        raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'keep-alive',
          'x-request-id': request.id,
        });
        raw.on('close', () => abort.abort());
        // a client gone before this handler ran (during the hooks) fired 'close' already
        if (raw.destroyed || request.raw.destroyed || request.raw.socket?.destroyed) abort.abort();
        messaging.closing.addEventListener('abort', () => abort.abort(), { once: true, signal: abort.signal });
        raw.write(': svc message stream\n\n');
        const window = new DeliveredWindow(after, LATE_RECORD_GRACE_MS);
        const end = await runMessageStream({
          sink: raw,
          signal: abort.signal,
          rechecks,
          expiresAt: request.agent.claims.exp * 1000,
          now,
          read: (waitMs, signal) =>
            messaging.pending(agent, { after, limit: PAGE_SIZE, maxBytes: PAGE_BYTES, waitMs, signal, window }),
          // the scope's per-request check: only the agent's active row (this incarnation) may read
          active: async () => (await ledger.activeAgent(agent.tenant_id, agent.agent_id))?.id === agent.id,
          onBusUnavailable: (err) =>
            request.log.warn({ err: err.message }, 'message stream: the bus is unavailable; reading again'),
        });
        if (end !== 'closed') {
          refused = true;
          request.log.info(
            { agent_row: agent.id },
            end === 'expired'
              ? 'message stream ended: its access token expired'
              : 'message stream ended: the agent was revoked or enrolled again',
          );
          const error =
            end === 'expired'
              ? new SvcError('invalid_token', 'The access token expired; reconnect with a fresh one and Last-Event-ID.')
              : new SvcError('invalid_token');
          if (!raw.writableNeedDrain) raw.write(errorEvent(error));
        }
      } catch (err) {
        request.log.warn({ err: (err as Error).message }, 'message stream ended by an error');
        if (!raw.writableEnded && !raw.destroyed)
          raw.write(
            errorEvent({
              error: 'stream_interrupted',
              message: 'The stream was interrupted; reconnect with Last-Event-ID.',
            }),
          );
      } finally {
        release();
        abort.abort();
        // Ended by the relay (a shutdown, a revocation, an expiry) while the reader is not taking what was
        // written: ending gracefully would wait on it for ever, so the connection is cut.
        if ((refused || messaging.closing.aborted) && raw.writableNeedDrain) raw.destroy();
        // Ended by the shutdown: the connection goes too (it was announced keep-alive, and
        // the server waits for every connection before it closes).
        const closeConnection = () => {
          if (messaging.closing.aborted) request.raw.socket?.end();
        };
        if (raw.destroyed) {
          // the client went, or was cut off above: nothing to end
        } else if (raw.writableEnded) closeConnection();
        else raw.end(closeConnection);
      }
    },
  );
}
