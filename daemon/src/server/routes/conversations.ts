/** Groups, broadcasts, the conversation list, paging and search (client/api.ts lists the paths). */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { CONVERSATION_LIMITS, type CreateConversationInput, type InviteInput } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { conversationInfo, createConversation, invite, leave, rosterOf } from '../../conversations/groups.js';
import { withMissing } from '../../conversations/read-marks.js';
import { DaemonError } from '../../errors.js';

const Params = Type.Object({ agent: Type.String({ minLength: 1, maxLength: 128 }) });
const ConvParams = Type.Object({
  agent: Type.String({ minLength: 1, maxLength: 128 }),
  id: Type.String({ minLength: 1, maxLength: 256 }),
});
const Numbers = Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 1000 });
const CreateBody = Type.Object({
  kind: Type.Union([Type.Literal('group'), Type.Literal('broadcast')]),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
  members: Type.Optional(Numbers),
});
const InviteBody = Type.Object({
  number: Type.String({ minLength: 1, maxLength: 128 }),
  role: Type.Optional(Type.Union([Type.Literal('member'), Type.Literal('observer')])),
});

function int(v: unknown, name: string, min: number, max: number, dflt: number): number {
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new DaemonError('validation_failed', `${name} must be an integer from ${min} to ${max}`);
  }
  return n;
}

function iso(v: unknown, name: string): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || Number.isNaN(Date.parse(v))) {
    throw new DaemonError('validation_failed', `${name} must be an ISO-8601 time`);
  }
  return new Date(v).toISOString();
}

function oneOf<T extends string>(v: unknown, name: string, allowed: readonly T[]): T | undefined {
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new DaemonError('validation_failed', `${name} must be one of ${allowed.join(', ')}`);
  }
  return v as T;
}

export function conversationRoutes(app: FastifyInstance, ctx: DaemonContext): void {
  const agent = (request: { params: unknown }) => ctx.agents.resolve((request.params as { agent: string }).agent);
  const id = (request: { params: unknown }) => (request.params as { id: string }).id;

  app.post('/v1/agents/:agent/conversations', { schema: { params: Params, body: CreateBody } }, async (request) =>
    createConversation(agent(request), request.body as CreateConversationInput),
  );
  app.get('/v1/agents/:agent/conversations/:id', { schema: { params: ConvParams } }, async (request) => {
    const session = agent(request);
    const roster = rosterOf(session, id(request));
    if (!roster) throw new DaemonError('unknown_conversation', `No group or broadcast ${id(request)} here.`);
    return conversationInfo(session, roster);
  });
  app.post(
    '/v1/agents/:agent/conversations/:id/invite',
    { schema: { params: ConvParams, body: InviteBody } },
    async (request) => invite(agent(request), id(request), request.body as InviteInput),
  );
  app.post('/v1/agents/:agent/conversations/:id/leave', { schema: { params: ConvParams } }, async (request) =>
    leave(agent(request), id(request)),
  );
  app.get('/v1/agents/:agent/conversations/:id/page', { schema: { params: ConvParams } }, async (request) => {
    const q = request.query as { limit?: string; since?: string };
    const session = agent(request);
    const conv = session.archive.resolveConversation(id(request));
    if (!conv) throw new DaemonError('unknown_conversation', `No conversation ${JSON.stringify(id(request))} here.`);
    const limit = int(q.limit, 'limit', 1, 1000, CONVERSATION_LIMITS.messagesDefault);
    if (q.since !== undefined && (typeof q.since !== 'string' || q.since.length > 512)) {
      throw new DaemonError('validation_failed', 'since must be a sort key from an earlier page');
    }
    return withMissing(session.archive, session.archive.conversationPage(conv, limit, q.since || undefined));
  });
  app.get('/v1/agents/:agent/conversation-search', { schema: { params: Params } }, async (request) => {
    const q = request.query as Record<string, string | undefined>;
    const participant = q.participant || undefined;
    if (participant !== undefined && !/^[A-Za-z0-9_-]{1,128}$/.test(participant)) {
      throw new DaemonError('validation_failed', 'participant must be an agent number');
    }
    const after = iso(q.after, 'after');
    const before = iso(q.before, 'before');
    const type = oneOf(q.type, 'type', ['text', 'media', 'structured'] as const);
    return agent(request).archive.searchMessages({
      ...(participant !== undefined ? { participant } : {}),
      ...(after !== undefined ? { after } : {}),
      ...(before !== undefined ? { before } : {}),
      ...(type !== undefined ? { type } : {}),
      sort: oneOf(q.sort, 'sort', ['recent', 'oldest'] as const) ?? 'recent',
      limit: int(q.limit, 'limit', 1, CONVERSATION_LIMITS.searchMax, 20),
      offset: int(q.offset, 'offset', 0, CONVERSATION_LIMITS.offsetMax, 0),
    });
  });
}
