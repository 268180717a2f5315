import { DAEMON_API as API, type ArchivedMessage } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { conversationInfo, rosterOf } from '../../conversations/groups.js';
import { saveAttachment } from '../../messaging/attachments.js';
import { listConversations } from '../../messaging/conversations.js';
import { ackMessage, check, inbox, readConversation } from '../../messaging/read.js';
import { replyTo, sendMessage } from '../../messaging/send.js';
import { trustStatus, withVerification } from '../../messaging/trust.js';
import type { AgentSession } from '../../session/session.js';
import { type DaemonApp, isoTime, route } from './route.js';

/** `verified=true`: each inbound message carries what the daemon verified about its sender. */
const verifiedIf = (request: { query: { verified?: boolean } }, session: AgentSession, messages: ArchivedMessage[]) =>
  request.query.verified === true ? withVerification(session.archive, messages) : messages;

export function messageRoutes(app: DaemonApp, ctx: DaemonContext): void {
  const agent = (request: { params: { agent: string } }) => ctx.agents.resolve(request.params.agent);

  const outOfService = () => ctx.agents.outOfService();
  route(app, API.send, async (request) => sendMessage({ ...request.body, session: agent(request), outOfService }));
  route(app, API.reply, async (request) => replyTo(agent(request), request.body, outOfService));
  route(app, API.inbox, async (request) => {
    const session = agent(request);
    return verifiedIf(request, session, await inbox(session, request.query.source ?? 'auto'));
  });
  route(app, API.read, async (request) => {
    const { last } = request.query;
    const since = isoTime(request.query.since, 'since');
    const session = agent(request);
    const { before } = request.query;
    const messages = readConversation(session, request.params.id, {
      ...(last !== undefined ? { last } : {}),
      ...(since !== undefined ? { since } : {}),
      ...(before !== undefined ? { before } : {}),
    });
    return verifiedIf(request, session, messages);
  });
  route(app, API.check, async (request, reply) => {
    // a client that went away (Ctrl-C) ends the wait; nothing is marked checked or acked for it
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.sent) gone.abort();
    };
    request.raw.socket.once('close', onClose);
    try {
      const session = agent(request);
      const { wait, ack } = request.query;
      return verifiedIf(request, session, await check(session, wait ?? 0, ack === true, gone.signal));
    } finally {
      request.raw.socket.off('close', onClose);
    }
  });
  route(app, API.ack, async (request) => ackMessage(agent(request), request.params.id));
  route(app, API.saveAttachment, async (request) =>
    saveAttachment(agent(request), request.params.id, request.body.dir),
  );
  route(app, API.search, async (request) => {
    const session = agent(request);
    return verifiedIf(request, session, session.archive.search(request.query.q, request.query.limit ?? 20));
  });
  route(app, API.conversations, async (request) => {
    const session = agent(request);
    const list = listConversations(session.archive, request.query.limit ?? 100);
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
  route(app, API.trust, async (request) => trustStatus(agent(request)));
  route(app, API.sync, async (request) => agent(request).sync());
}
