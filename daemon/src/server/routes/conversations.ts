/** Groups, broadcasts, the conversation list, paging and search (client/api.ts declares them). */
import { DAEMON_API as API, CONVERSATION_LIMITS } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { conversationInfo, createConversation, invite, leave, rosterOf } from '../../conversations/groups.js';
import { withMissing } from '../../conversations/read-marks.js';
import { DaemonError } from '../../errors.js';
import { type DaemonApp, isoTime, route } from './route.js';

export function conversationRoutes(app: DaemonApp, ctx: DaemonContext): void {
  const agent = (request: { params: { agent: string } }) => ctx.agents.resolve(request.params.agent);

  route(app, API.createConversation, async (request) => createConversation(agent(request), request.body));
  route(app, API.getConversation, async (request) => {
    const session = agent(request);
    const { id } = request.params;
    const roster = rosterOf(session, id);
    if (!roster) throw new DaemonError('unknown_conversation', `No group or broadcast ${id} here.`);
    return conversationInfo(session, roster);
  });
  route(app, API.invite, async (request) => invite(agent(request), request.params.id, request.body));
  route(app, API.leave, async (request) => leave(agent(request), request.params.id));
  route(app, API.conversationMessages, async (request) => {
    const { limit, since } = request.query;
    const session = agent(request);
    const conv = session.archive.resolveConversation(request.params.id);
    if (!conv)
      throw new DaemonError('unknown_conversation', `No conversation ${JSON.stringify(request.params.id)} here.`);
    return withMissing(
      session.archive,
      session.archive.conversationPage(conv, limit ?? CONVERSATION_LIMITS.messagesDefault, since || undefined),
    );
  });
  route(app, API.searchConversations, async (request) => {
    const q = request.query;
    const participant = q.participant || undefined;
    const after = isoTime(q.after, 'after');
    const before = isoTime(q.before, 'before');
    return agent(request).archive.searchMessages({
      ...(participant !== undefined ? { participant } : {}),
      ...(after !== undefined ? { after } : {}),
      ...(before !== undefined ? { before } : {}),
      ...(q.type !== undefined ? { type: q.type } : {}),
      sort: q.sort ?? 'recent',
      limit: q.limit ?? 20,
      offset: q.offset ?? 0,
    });
  });
}
