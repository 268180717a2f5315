/**
 * Groups and broadcasts on the sending side: create, invite, leave and post. A message
 * is sealed once per recipient under one message id (the relay sees N envelopes and no
 * roster); the roster is what this agent derives from the control messages it holds.
 * Every message carries this agent's next number in the conversation inside the
 * ciphertext, control messages included, so receivers see a drop, repeat or reordering.
 */
import { randomBytes } from 'node:crypto';
import {
  createEnvelopeHeader,
  type ContentType as EnvelopeContentType,
  newMessageId,
  toBase64url,
  utf8,
} from '@svc/shared';
import { sealEnvelope } from '@svc/shared/node';
import type { ConversationInfo, CreateConversationInput, InviteInput, SentMessage } from '../client/api.js';
import { DaemonError } from '../errors.js';
import { firstPost, sealingKey } from '../messaging/send.js';
import type { AgentSession } from '../session/session.js';
import { encodePayload, isShowable } from './payload.js';
import {
  activeMember,
  type ControlBody,
  deriveRoster,
  type GroupKind,
  MEMBER_ROLES,
  type MemberRole,
  mayPost,
  newGroupId,
  parseGroupId,
  type Roster,
  recipientsOf,
} from './roster.js';

const AGENT_NUMBER = /^[A-Za-z0-9_-]{1,128}$/;

export function rosterOf(session: AgentSession, conversationId: string): Roster | undefined {
  if (!parseGroupId(conversationId)) return undefined;
  return deriveRoster(conversationId, session.archive.controls(conversationId));
}

export function conversationInfo(session: AgentSession, r: Roster): ConversationInfo {
  const me = r.members.find((m) => m.number === session.config.agent_number);
  return {
    conversation_id: r.conversation_id,
    conversation_type: r.kind,
    name: r.name,
    ...(r.description !== undefined ? { description: r.description } : {}),
    creator: r.creator,
    members: r.members.map((m) => ({ number: m.number, role: m.role, active: m.active })),
    me: me ? { role: me.role, active: me.active } : { role: 'member', active: false },
  };
}

/** The roster of a conversation this agent is an active member of; a clear refusal otherwise. */
function myRoster(session: AgentSession, conversationId: string): Roster {
  const r = rosterOf(session, conversationId);
  if (!r) {
    // a direct conversation has no roster: there is nothing to leave or invite to
    if (conversationId.startsWith('dm:') && session.archive.resolveConversation(conversationId)) {
      throw new DaemonError(
        'validation_failed',
        `${JSON.stringify(conversationId)} is a direct conversation: only a group or broadcast has members to invite or leave.`,
      );
    }
    throw new DaemonError('unknown_conversation', `No group or broadcast ${JSON.stringify(conversationId)} here.`);
  }
  if (!activeMember(r, session.config.agent_number)) {
    throw new DaemonError(
      'not_a_member',
      `${session.config.agent_number} is not a member of ${conversationId} (left or removed).`,
    );
  }
  return r;
}

function checkNumbers(numbers: unknown, what: string): string[] {
  if (numbers === undefined) return [];
  if (!Array.isArray(numbers) || numbers.some((n) => typeof n !== 'string' || !AGENT_NUMBER.test(n))) {
    throw new DaemonError('validation_failed', `${what} must be agent numbers (letters, digits, _ and -)`);
  }
  if (numbers.length > 1000) throw new DaemonError('validation_failed', `${what}: at most 1000`);
  return [...new Set(numbers as string[])];
}

/**
 * Seals one message to each recipient (same id, same number), posts them (queued in the
 * outbox when the relay does not answer) and archives it once as outbound. `mustReach`:
 * recipients that may not be left out (those a roster change adds).
 */
async function post(
  session: AgentSession,
  r: Pick<Roster, 'conversation_id' | 'kind'>,
  recipients: readonly string[],
  contentType: EnvelopeContentType,
  body: { body: string } | { control: ControlBody },
  mustReach: ReadonlySet<string> = new Set(),
): Promise<SentMessage> {
  const me = session.config;
  // an all-local roster (every recipient an agent of this machine) stays on the device:
  // keys come from the local sessions, delivery goes straight to their inbound processing
  const locals = recipients.map((n) => session.localPeer(n));
  const onDevice = locals.length > 0 && locals.every((l) => l !== undefined);
  // every key first: a member without a usable key fails the send before a number is taken,
  // except a member the directory no longer lists (revoked or deregistered without leaving):
  // it is left out and named, or one departed member would silence the group and stop every
  // roster change (a leave, an invite) for good; one a roster change adds must be reachable
  const keys: Array<{ agentNumber: string; key: Uint8Array }> = [];
  const skipped: string[] = [];
  for (const [i, n] of recipients.entries()) {
    const local = locals[i];
    try {
      keys.push(onDevice && local ? { agentNumber: n, key: local.keys().encPublic } : await sealingKey(session, n));
    } catch (err) {
      if (mustReach.has(n) || !(err instanceof DaemonError) || err.code !== 'unknown_recipient') throw err;
      skipped.push(n);
    }
  }
  // a message nobody can read is refused; a roster change with nobody left to tell is still made here
  if ('body' in body && keys.length === 0 && skipped.length > 0) {
    throw new DaemonError(
      'unknown_recipient',
      `No member of ${r.conversation_id} can be reached: the relay no longer lists ${skipped.join(', ')} (revoked or deregistered).`,
    );
  }
  const seq = session.archive.nextConvSeq(r.conversation_id);
  const messageId = newMessageId();
  const sentAt = new Date().toISOString();
  const plaintext = utf8(encodePayload({ svc: 'group/v1', seq, ...body } as Parameters<typeof encodePayload>[0]));
  const envelopes = keys.map((k) =>
    sealEnvelope({
      header: createEnvelopeHeader({
        message_id: messageId,
        sent_at: sentAt,
        sender: me.agent_number,
        recipient: k.agentNumber,
        conversation_id: r.conversation_id,
        conversation_type: r.kind,
        content_type: contentType,
        deployment_id: me.deployment_id,
        tenant_id: me.tenant_id,
      }),
      plaintext,
      recipientX25519Public: k.key,
      senderEd25519Private: session.keys().signPrivate,
    }),
  );
  const archived = (state: 'queued' | 'sent') =>
    session.archive.insertMessage({
      message_id: messageId,
      conversation_id: r.conversation_id,
      conversation_type: r.kind,
      direction: 'outbound',
      from: me.agent_number,
      to: r.conversation_id,
      content_type: contentType,
      content: 'body' in body ? body.body : JSON.stringify(body.control),
      sent_at: sentAt,
      received_at: null,
      acked_at: null,
      delivered_at: null,
      envelope: envelopes.length > 0 ? JSON.stringify(envelopes) : undefined,
      send_state: state,
      conv_seq: seq,
    });
  let status: SentMessage['status'] = 'accepted';
  if (onDevice) {
    const took = await deliverOnDevice(session, locals as AgentSession[], messageId, envelopes);
    archived('sent');
    // each member that archived it: what the relay's receipt would say (delivered, as a direct message)
    for (const t of took) session.archive.recordReceipt(messageId, t.agentNumber, 'acked', t.at);
  } else if (envelopes.length > 0) {
    // kept as queued before it is posted, as a direct message is (send.ts): a daemon stopped
    // while the relay answers posts it again from its outbox, under its id
    archived('queued');
    status = await firstPost(session, messageId, envelopes, (err, requestsDone) => {
      if (requestsDone === 0) {
        // the number goes back only when no member got it: one that did would take the
        // next message under the same number for a repeat and refuse it
        session.archive.dropQueued(messageId);
        session.archive.releaseConvSeq(r.conversation_id, seq);
      } else {
        // some members have it: it stays in the archive, failed, and is not posted again
        session.archive.settleQueued(messageId, 'failed', `${err.relayErrorCode}: ${err.message}`);
      }
    });
  } else archived('sent');
  if (status === 'queued') session.wakeOutbox();
  session.log.info(
    {
      agent: me.name,
      message_id: messageId,
      conversation_id: r.conversation_id,
      recipients: keys.length,
      status,
      ...(skipped.length > 0 ? { skipped } : {}),
    },
    'group message sent',
  );
  return {
    message_id: messageId,
    conversation_id: r.conversation_id,
    to: r.conversation_id,
    sent_at: sentAt,
    status,
    state: status === 'queued' ? 'queued' : 'sent',
    recipients: keys.map((k) => k.agentNumber),
    ...(skipped.length > 0 ? { skipped } : {}),
  };
}

/**
 * Hands each envelope to the local recipient's inbound processing (which verifies and
 * opens it as any other), pinning the sender's keys there first when it has no pin: both
 * agents are in this machine's vault, so no directory is asked. Returns who archived it, when.
 */
async function deliverOnDevice(
  session: AgentSession,
  peers: AgentSession[],
  messageId: string,
  envelopes: unknown[],
): Promise<Array<{ agentNumber: string; at: string }>> {
  const me = session.config;
  const mine = session.keys();
  const took: Array<{ agentNumber: string; at: string }> = [];
  for (const [i, peer] of peers.entries()) {
    if (!peer.archive.getPeer(me.agent_number)) {
      peer.archive.pinPeer({
        agent_number: me.agent_number,
        agent_id: me.agent_id,
        signing_public_key: toBase64url(mine.signPublic),
        encryption_public_key: toBase64url(mine.encPublic),
        key_version: null,
      });
    }
    const outcome = await peer.inbound.process({
      message_id: messageId,
      sender: me.agent_number,
      envelope: envelopes[i],
    });
    if (outcome === 'archived' || outcome === 'duplicate') {
      took.push({ agentNumber: peer.config.agent_number, at: new Date().toISOString() });
    }
  }
  return took;
}

export async function createConversation(
  session: AgentSession,
  input: CreateConversationInput,
): Promise<ConversationInfo> {
  const kind: GroupKind = input.kind;
  if (kind !== 'group' && kind !== 'broadcast')
    throw new DaemonError('validation_failed', 'kind must be group or broadcast');
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (name === '' || name.length > 200) throw new DaemonError('validation_failed', 'name must be 1 to 200 characters');
  if (!isShowable(name, false)) {
    throw new DaemonError('validation_failed', 'name must be one line without control or text-direction characters');
  }
  if (input.description !== undefined && (typeof input.description !== 'string' || input.description.length > 2000)) {
    throw new DaemonError('validation_failed', 'description must be at most 2000 characters');
  }
  if (input.description !== undefined && !isShowable(input.description, true)) {
    throw new DaemonError('validation_failed', 'description must not hold control or text-direction characters');
  }
  const me = session.config.agent_number;
  const members = checkNumbers(input.members, kind === 'group' ? 'participants' : 'subscribers').filter(
    (n) => n !== me,
  );
  const id = newGroupId(kind, me, toBase64url(randomBytes(16)));
  const control: ControlBody = {
    op: 'create',
    kind,
    name,
    ...(input.description !== undefined ? { description: input.description } : {}),
    members: members.map((number) => ({ number, role: 'member' as const })),
  };
  await post(session, { conversation_id: id, kind }, members, 'control', { control }, new Set(members));
  return conversationInfo(session, myRoster(session, id));
}

/** Only the creator invites (documented in docs/conversations.md): authority then never depends on order. */
export async function invite(
  session: AgentSession,
  conversationId: string,
  input: InviteInput,
): Promise<ConversationInfo> {
  const r = myRoster(session, conversationId);
  const me = session.config.agent_number;
  if (r.creator !== me)
    throw new DaemonError('not_conversation_creator', `Only ${r.creator} invites to ${conversationId}.`);
  const [number] = checkNumbers([input.number], 'the agent number');
  const role: MemberRole = input.role ?? 'member';
  if (!MEMBER_ROLES.includes(role)) throw new DaemonError('validation_failed', 'role must be member or observer');
  if (number === me) throw new DaemonError('validation_failed', 'The creator is already in the conversation.');
  const control: ControlBody = {
    op: 'invite',
    kind: r.kind,
    name: r.name,
    ...(r.description !== undefined ? { description: r.description } : {}),
    number: number as string,
    role,
    // the invitee never saw the earlier control messages: it starts from the creator's view
    snapshot: r.members,
  };
  const to = [...new Set([...recipientsOf(r, me, true), number as string])];
  await post(session, r, to, 'control', { control }, new Set([number as string]));
  return conversationInfo(session, myRoster(session, conversationId));
}

/** Leaves: every other member is told (so rosters converge), and nothing more is sent or taken here. */
export async function leave(session: AgentSession, conversationId: string): Promise<ConversationInfo> {
  const r = myRoster(session, conversationId);
  const me = session.config.agent_number;
  await post(session, r, recipientsOf(r, me, true), 'control', { control: { op: 'leave' } });
  const after = rosterOf(session, conversationId) as Roster;
  return conversationInfo(session, after);
}

export async function sendToConversation(
  session: AgentSession,
  conversationId: string,
  content: string,
  contentType: 'text' | 'structured',
): Promise<SentMessage> {
  const r = myRoster(session, conversationId);
  const me = session.config.agent_number;
  if (!mayPost(r, me)) {
    throw new DaemonError(
      'not_allowed_to_post',
      `${me} is an observer in ${conversationId}: it reads but does not post.`,
    );
  }
  return post(session, r, recipientsOf(r, me, false), contentType, { body: content });
}
