import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { ArchivedMessage, RelayCall, ReplyInput, SendInput } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { conversationInfo, rosterOf } from '../../conversations/groups.js';
import { DaemonError } from '../../errors.js';
import { saveAttachment } from '../../messaging/attachments.js';
import { listConversations } from '../../messaging/conversations.js';
import { ackMessage, check, inbox, readConversation } from '../../messaging/read.js';
import { replyTo, sendMessage } from '../../messaging/send.js';
import { trustStatus, withVerification } from '../../messaging/trust.js';
import type { AgentSession } from '../../session/session.js';

const AgentParams = Type.Object({ agent: Type.String({ minLength: 1, maxLength: 128 }) });
const ContentType = Type.Union([Type.Literal('text'), Type.Literal('structured'), Type.Literal('media')]);
const SendBody = Type.Object({
  to: Type.Optional(Type.String({ maxLength: 256 })),
  content: Type.String({ maxLength: 1024 * 1024 }),
  content_type: Type.Optional(ContentType),
  conversation_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  file_path: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
});
const ReplyBody = Type.Object({
  message_id: Type.String({ minLength: 1 }),
  content: Type.String({ maxLength: 1024 * 1024 }),
  to: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  content_type: Type.Optional(ContentType),
});
const RelayBody = Type.Object({
  method: Type.Union(['GET', 'POST', 'PATCH', 'PUT', 'DELETE'].map((m) => Type.Literal(m))),
  path: Type.String({ minLength: 1, maxLength: 2048 }),
  body: Type.Optional(Type.Unknown()),
});
const int = (v: unknown, name: string, min: number, max: number): number | undefined => {
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new DaemonError('validation_failed', `${name} must be an integer from ${min} to ${max}`);
  }
  return n;
};
const MUTE_PATH = /^\/api\/v1\/agents\/[^/?]+\/mute(\?|$)/;
const bool = (v: unknown): boolean => v === 'true' || v === '1' || v === true;
/** `verified=true`: each inbound message carries what the daemon verified about its sender. */
const verifiedIf = (request: { query: unknown }, session: AgentSession, messages: ArchivedMessage[]) =>
  bool((request.query as { verified?: string }).verified) ? withVerification(session.archive, messages) : messages;

/** A relay path under /api/v1/, normalized; no way out of it. */
export function relayPath(path: string): string {
  const p = path.replace(/^\/+/, '').replace(/^api\/v1\//, '');
  if (p.split(/[/?]/)[0] === '' || /(^|\/)\.\.?(\/|$|\?)/.test(p) || p.includes('\\') || /^[a-z]+:/i.test(p)) {
    throw new DaemonError('validation_failed', 'path must be a relay path under /api/v1/');
  }
  return `/api/v1/${p}`;
}

export function messageRoutes(app: FastifyInstance, ctx: DaemonContext): void {
  const agent = (request: { params: unknown }) => ctx.agents.resolve((request.params as { agent: string }).agent);

  app.post('/v1/agents/:agent/send', { schema: { params: AgentParams, body: SendBody } }, async (request) =>
    sendMessage({ ...(request.body as SendInput), session: agent(request) }),
  );
  app.post('/v1/agents/:agent/reply', { schema: { params: AgentParams, body: ReplyBody } }, async (request) =>
    replyTo(agent(request), request.body as ReplyInput),
  );
  app.get('/v1/agents/:agent/inbox', { schema: { params: AgentParams } }, async (request) => {
    const source = (request.query as { source?: string }).source ?? 'auto';
    if (!['auto', 'local', 'api'].includes(source)) {
      throw new DaemonError('validation_failed', 'source must be auto, local or api');
    }
    const session = agent(request);
    return verifiedIf(request, session, await inbox(session, source as 'auto' | 'local' | 'api'));
  });
  app.get('/v1/agents/:agent/conversations/:id/messages', async (request) => {
    const q = request.query as { last?: string; since?: string };
    if (q.since !== undefined && Number.isNaN(Date.parse(q.since))) {
      throw new DaemonError('validation_failed', 'since must be an ISO-8601 time');
    }
    const last = int(q.last, 'last', 1, 10_000);
    const session = agent(request);
    const messages = readConversation(session, (request.params as { id: string }).id, {
      ...(last !== undefined ? { last } : {}),
      ...(q.since !== undefined ? { since: new Date(q.since).toISOString() } : {}),
    });
    return verifiedIf(request, session, messages);
  });
  app.get('/v1/agents/:agent/check', { schema: { params: AgentParams } }, async (request, reply) => {
    const q = request.query as { wait?: string; ack?: string };
    // a client that went away (Ctrl-C) ends the wait; nothing is marked checked or acked for it
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.sent) gone.abort();
    };
    request.raw.socket.once('close', onClose);
    try {
      const session = agent(request);
      return verifiedIf(
        request,
        session,
        await check(session, int(q.wait, 'wait', 0, 300) ?? 0, bool(q.ack), gone.signal),
      );
    } finally {
      request.raw.socket.off('close', onClose);
    }
  });
  app.post('/v1/agents/:agent/messages/:id/ack', async (request) =>
    ackMessage(agent(request), (request.params as { id: string }).id),
  );
  app.post(
    '/v1/agents/:agent/messages/:id/attachment',
    { schema: { body: Type.Object({ dir: Type.String({ minLength: 1, maxLength: 4096 }) }) } },
    async (request) =>
      saveAttachment(agent(request), (request.params as { id: string }).id, (request.body as { dir: string }).dir),
  );
  app.get('/v1/agents/:agent/search', { schema: { params: AgentParams } }, async (request) => {
    const q = request.query as { q?: string; limit?: string };
    if (!q.q) throw new DaemonError('validation_failed', 'q is required');
    const session = agent(request);
    return verifiedIf(request, session, session.archive.search(q.q, int(q.limit, 'limit', 1, 500) ?? 20));
  });
  app.get('/v1/agents/:agent/conversations', { schema: { params: AgentParams } }, async (request) => {
    const session = agent(request);
    const list = listConversations(
      session.archive,
      int((request.query as { limit?: string }).limit, 'limit', 1, 1000) ?? 100,
    );
    const lasts = verifiedIf(
      request,
      session,
      list.flatMap((c) => (c.last_message ? [c.last_message] : [])),
    );
    const byId = new Map(lasts.map((m) => [m.message_id, m]));
    return list.map((c) => {
      // a group's or broadcast's name, creator and members, as this agent derives them
      const roster = c.conversation_type === 'direct' ? undefined : rosterOf(session, c.conversation_id);
      const verifiedLast = c.last_message ? { last_message: byId.get(c.last_message.message_id)! } : {};
      return { ...(roster ? conversationInfo(session, roster) : {}), ...c, ...verifiedLast };
    });
  });
  app.get('/v1/agents/:agent/trust', { schema: { params: AgentParams } }, async (request) =>
    trustStatus(agent(request)),
  );
  app.post('/v1/agents/:agent/sync', { schema: { params: AgentParams } }, async (request) => agent(request).sync());
  app.post('/v1/agents/:agent/relay', { schema: { params: AgentParams, body: RelayBody } }, async (request) => {
    const call = request.body as RelayCall;
    const session = agent(request);
    const path = relayPath(call.path);
    const res = await session.relay.request({
      method: call.method,
      path,
      ...(call.body !== undefined ? { body: call.body } : {}),
    });
    // `abuse mute` / `unmute` go through here: the session acts on the new list at once
    if (MUTE_PATH.test(path) && res.status < 300) await session.refreshMutes();
    return { status: res.status, body: res.body ?? null };
  });
}
