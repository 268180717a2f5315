/**
 * Attachment blobs (relay/src/blobs/blob-store.ts): upload opaque encrypted bytes for
 * named recipients, fetch them, acknowledge them. Limits: SVC_RELAY_BLOB_MAX_BYTES per
 * blob (413 blob_too_large), the tenant's blob store (507 tenant_storage_full), and
 * TRANSFERS_PER_AGENT uploads and fetches at once per agent (429 rate_limited).
 */
import { Type } from '@sinclair/typebox';
import { SvcError } from '@svc/shared';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BLOB_ID } from '../blobs/blob-store.js';
import { STREAM_MAX_AGE_MS } from '../bus/index.js';
import { RateLimitedError } from '../http/rate-limit.js';
import type { RoutePlugin } from '../http/scopes.js';
import { StreamSlots } from '../messages/stream-slots.js';
import type { TypedApp } from './types.js';

const AGENT_NUMBER = /^[A-Za-z0-9_-]{1,128}$/;
const MAX_RECIPIENTS = 100;
/**
 * Uploads and fetches one agent may run at once on this instance: each holds a whole blob
 * (up to SVC_RELAY_BLOB_MAX_BYTES) in memory, so one agent may not hold many.
 */
export const TRANSFERS_PER_AGENT = 4;

export const blobRoutes: RoutePlugin = async (app, { ctx }) => {
  const store = ctx.blobs;
  const max = ctx.config.limits.blobMaxBytes;
  const transfers = new StreamSlots(
    TRANSFERS_PER_AGENT,
    (open) =>
      new RateLimitedError(
        1,
        `At most ${TRANSFERS_PER_AGENT} attachment transfers at once per agent; retry when one ends.`,
        `${open} transfers`,
      ),
  );
  /** Holds a transfer slot of the agent until the answer is done or the connection goes (taken before the body is read). */
  const holdSlot = async (request: FastifyRequest, reply: FastifyReply) => {
    const release = transfers.take(request.agent.row.id);
    // a client gone already (during authentication) would never close it again
    if (request.raw.destroyed || reply.raw.destroyed) release();
    else reply.raw.once('close', release);
  };
  const blobParams = Type.Object({ blob_id: Type.String({ pattern: BLOB_ID.source }) });
  const tooLarge = () =>
    new SvcError(
      'blob_too_large',
      `An attachment may be at most ${max} bytes once encrypted here (SVC_RELAY_BLOB_MAX_BYTES); send a smaller file.`,
    );

  // raw bytes: a scope of its own keeps this parser to the upload route
  await app.register(async (scope: TypedApp) => {
    scope.addContentTypeParser('application/octet-stream', { parseAs: 'buffer', bodyLimit: max }, (_req, body, done) =>
      done(null, body),
    );
    scope.post(
      '/api/v1/blobs',
      {
        onRequest: [
          async (request) => {
            // refused before the body is read when the size is declared
            if (Number(request.headers['content-length'] ?? 0) > max) throw tooLarge();
          },
          holdSlot,
        ],
        bodyLimit: max,
        schema: {
          summary: 'Upload an encrypted attachment for the named recipients (`for`, comma-separated agent numbers)',
          querystring: Type.Object(
            { for: Type.String({ minLength: 1, maxLength: 129 * MAX_RECIPIENTS }) },
            { additionalProperties: false },
          ),
          response: { 201: Type.Object({ blob_id: Type.String(), size: Type.Integer() }) },
        },
        errorHandler: (err) => {
          // the body limit and the content type of this route speak of attachments
          const code = (err as { code?: string }).code;
          if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') throw tooLarge();
          if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
            throw new SvcError('unsupported_media_type', 'Send the attachment as application/octet-stream.');
          }
          throw err;
        },
      },
      async (request, reply) => {
        const body = request.body;
        if (!Buffer.isBuffer(body)) {
          throw new SvcError('validation_failed', 'Send the attachment as application/octet-stream.');
        }
        if (body.length > max) throw tooLarge();
        // an encrypted attachment holds at least its tag: an empty one is nobody's file
        if (body.length === 0) {
          throw new SvcError('validation_failed', 'The attachment is empty; an encrypted attachment never is.');
        }
        const recipients = [...new Set((request.query as { for: string }).for.split(','))];
        if (recipients.length > MAX_RECIPIENTS || recipients.some((n) => !AGENT_NUMBER.test(n))) {
          throw new SvcError('validation_failed', `for: up to ${MAX_RECIPIENTS} agent numbers, comma-separated.`);
        }
        const { row } = request.agent;
        // as for a send: a recipient must be an agent of the tenant (a blob for nobody would
        // sit in the tenant's store until it expires)
        for (const n of recipients) {
          if (!(await ctx.stores.messages.recipient(row.tenant_id, n))) {
            throw new SvcError('unknown_recipient', `for: ${n} is not an agent of your tenant`);
          }
        }
        const share = ctx.config.limits.agentMaxBlobBytes;
        const admit =
          share > 0
            ? async (blobId: string) => {
                const now = ctx.now();
                const blob = { id: blobId, owner: row.id, size: body.length };
                // blobs older than the stream's max age are gone from it, and no longer count
                if (!(await ctx.stores.blobUsage.admit(blob, now, now - STREAM_MAX_AGE_MS, share))) {
                  throw new SvcError('agent_blob_quota_full', undefined, {
                    detail: `${row.agent_number}: ${body.length} more bytes would pass SVC_RELAY_AGENT_MAX_BLOB_BYTES (${share})`,
                  });
                }
              }
            : undefined;
        const put = await store.put(row.tenant_id, row.agent_number, recipients, body, admit);
        return reply.status(201).send({ ...put, size: body.length });
      },
    );
  });

  app.get(
    '/api/v1/blobs/:blob_id',
    {
      onRequest: holdSlot,
      schema: { summary: 'Fetch an attachment (its owner or a named recipient)', params: blobParams },
    },
    async (request, reply) => {
      const { row } = request.agent;
      const bytes = await store.get(row.tenant_id, row.agent_number, (request.params as { blob_id: string }).blob_id);
      return reply.type('application/octet-stream').send(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
    },
  );

  app.post(
    '/api/v1/blobs/:blob_id/ack',
    {
      schema: {
        summary: 'A recipient has the attachment; once every recipient said so it is deleted',
        params: blobParams,
        response: { 200: Type.Object({ purged: Type.Boolean() }) },
      },
    },
    async (request) => {
      const { row } = request.agent;
      return store.ack(row.tenant_id, row.agent_number, (request.params as { blob_id: string }).blob_id);
    },
  );
};
