/** Reading from the archive: inbox, conversation, check (long-poll), ack. */
import { isLocalOnly } from '../agents/local-agent.js';
import type { ArchivedMessage } from '../client/api.js';
import { orAfter } from '../client/or-after.js';
import { withMissing } from '../conversations/read-marks.js';
import { DaemonError } from '../errors.js';
import type { AgentSession } from '../session/session.js';

export const CHECK_CURSOR = 'check';
export const MAX_CHECK_WAIT_S = 300;

/** How long `auto` waits for the relay, while the live stream is down, before it answers from the archive. */
export const AUTO_SYNC_WAIT_MS = 3_000;

/** The one sync an `auto` read started per session, still running (a hung relay must not pile them up). */
const autoSyncs = new WeakMap<AgentSession, Promise<void>>();

function autoSync(session: AgentSession): Promise<void> {
  let running = autoSyncs.get(session);
  if (!running) {
    running = session
      .sync()
      .then(
        () => undefined,
        (err: unknown) => {
          session.log.warn(
            { agent: session.name, err: (err as Error).message },
            'inbox: relay unreachable; local only',
          );
        },
      )
      .finally(() => autoSyncs.delete(session));
    autoSyncs.set(session, running);
  }
  return running;
}

export async function inbox(session: AgentSession, source: 'auto' | 'local' | 'api'): Promise<ArchivedMessage[]> {
  // `api` asks the relay now; `auto` does so only when the live stream is not connected, and
  // answers from the archive once the relay has had a few seconds (a hung relay would hold the
  // read for its whole deadline; the sync goes on and archives what it gets). A --local agent
  // has no relay: its archive is all there is.
  if (isLocalOnly(session.config)) {
    if (source === 'api') throw new DaemonError('local_agent_unreachable', 'A --local agent has no relay inbox.');
  } else if (source === 'api') {
    await session.sync();
  } else if (source === 'auto' && session.state !== 'connected') {
    await syncAwhile(session);
  }
  return session.archive.inbox();
}

/** Whether the agent's one background sync ended within AUTO_SYNC_WAIT_MS (it goes on either way). */
async function syncAwhile(session: AgentSession): Promise<boolean> {
  return (await orAfter(autoSync(session), AUTO_SYNC_WAIT_MS, 'late' as const)) !== 'late';
}

export function readConversation(
  session: AgentSession,
  ref: string,
  opts: { last?: number; since?: string; before?: string },
): ArchivedMessage[] {
  const id = session.archive.resolveConversation(ref);
  if (id && opts.before !== undefined && session.archive.getMessage(opts.before)?.conversation_id !== id) {
    throw new DaemonError('unknown_message', `No message ${opts.before} in ${id}: before names one of its messages.`);
  }
  // a gap in a group shows with the numbers still missing
  if (id) return withMissing(session.archive, session.archive.conversation(id, opts));
  // a pinned peer we have not talked with yet has an empty conversation; anything else is unknown
  if (session.archive.getPeer(ref)) return [];
  throw new DaemonError(
    'unknown_conversation',
    `No conversation ${JSON.stringify(ref)} and no peer by that number here.`,
  );
}

/**
 * New inbound since the last check that is still unacknowledged and not from a muted
 * sender (what `msg check` promises); waits up to `waitS` seconds for the first one.
 */
export async function check(
  session: AgentSession,
  waitS: number,
  ack: boolean,
  cancelled?: AbortSignal,
): Promise<ArchivedMessage[]> {
  const cursor = session.archive.getCursor(CHECK_CURSOR);
  const fresh = (m: ArchivedMessage) => m.acked_at === null && !m.muted;
  let page = session.archive.inboundAfter(cursor);
  if (!page.messages.some(fresh) && waitS > 0 && !session.stopped.aborted) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.min(waitS, MAX_CHECK_WAIT_S) * 1000);
      const off = session.events.subscribe((e) => {
        if (e.type === 'message' && e.agent === session.name) done();
      });
      // the daemon is stopping, or the client went away: answer now
      session.stopped.addEventListener('abort', done, { once: true });
      cancelled?.addEventListener('abort', done, { once: true });
      function done() {
        clearTimeout(timer);
        off();
        session.stopped.removeEventListener('abort', done);
        cancelled?.removeEventListener('abort', done);
        resolve();
      }
    });
    if (session.stopped.aborted || cancelled?.aborted) return [];
    page = session.archive.inboundAfter(cursor);
  }
  session.archive.setCursor(CHECK_CURSOR, page.lastSeq);
  const messages = page.messages.filter(fresh);
  if (!ack) return messages;
  const at = new Date().toISOString();
  const read = messages.map((m) => ({
    ...m,
    acked_at: session.archive.ack(m.message_id, at) ?? at,
    state: 'read' as const,
  }));
  if (read.length > 0)
    session.events.emit({ type: 'read', agent: session.name, message_ids: read.map((m) => m.message_id) });
  return read;
}

/** Local acknowledgement (read); the relay was already acked when the message was archived. */
export async function ackMessage(
  session: AgentSession,
  messageId: string,
): Promise<{ message_id: string; acked_at: string }> {
  if (session.archive.sent(messageId)) {
    throw new DaemonError(
      'unknown_message',
      `${messageId} is a message you sent: only received messages are acknowledged.`,
    );
  }
  let at = session.archive.ack(messageId, new Date().toISOString());
  let answered = true;
  if (at === undefined) {
    // not archived yet (stream offline?): fetch what is pending first, never ack unseen mail;
    // a relay that hangs is given a few seconds, as an inbox read gives it
    answered = await syncAwhile(session);
    at = session.archive.ack(messageId, new Date().toISOString());
  }
  if (at === undefined) {
    throw new DaemonError(
      'unknown_message',
      `No archived message ${messageId}${answered ? '' : ' (the relay did not answer in time: it may still come; try again)'}.`,
    );
  }
  session.events.emit({ type: 'read', agent: session.name, message_ids: [messageId] });
  return { message_id: messageId, acked_at: at };
}
