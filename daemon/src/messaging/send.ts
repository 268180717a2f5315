/**
 * send / reply: seal to the peer's pinned encryption key with our identity key, hand the
 * envelope to the relay, archive the outbound message. The relay treats the message id
 * as an idempotency key, so a retried send is reported as `duplicate`, never doubled.
 */
import { createEnvelopeHeader, ENVELOPE_ID_PATTERN, type ContentType as EnvelopeContentType, utf8 } from '@svc/shared';
import { sealEnvelope } from '@svc/shared/node';
import type { ContentType, ReplyInput, SendInput, SentMessage } from '../client/api.js';
import { DaemonError } from '../errors.js';
import type { AgentSession } from '../session/session.js';
import { directConversationId, directPeer } from './conversation-id.js';

const CONTENT_TYPES: readonly ContentType[] = ['text', 'structured', 'media'];

export { directConversationId } from './conversation-id.js';

function checkContent(content: unknown, type: ContentType): string {
  if (typeof content !== 'string') throw new DaemonError('validation_failed', 'content must be a string');
  if (type === 'structured') {
    try {
      JSON.parse(content);
    } catch {
      throw new DaemonError('validation_failed', 'structured content must be JSON text');
    }
  }
  return content;
}

export async function sendMessage(s: SendInput & { session: AgentSession }): Promise<SentMessage> {
  const { session } = s;
  const me = session.config;
  const contentType = s.content_type ?? 'text';
  if (!CONTENT_TYPES.includes(contentType)) {
    throw new DaemonError('validation_failed', `content_type must be one of ${CONTENT_TYPES.join(', ')}`);
  }
  const content = checkContent(s.content, contentType);
  if (s.conversation_id !== undefined && !ENVELOPE_ID_PATTERN.test(s.conversation_id)) {
    throw new DaemonError('validation_failed', 'conversation_id may use letters, digits and ._:@- (1 to 256)');
  }
  // a conversation id names its other party itself; the archive is not asked who that is
  const to = s.to || (s.conversation_id && directPeer(s.conversation_id, me.agent_number));
  if (!to) {
    throw new DaemonError(
      s.conversation_id ? 'conversation_mismatch' : 'validation_failed',
      s.conversation_id
        ? `${s.conversation_id} is not a direct conversation of ${me.agent_number}; send with a recipient instead.`
        : 'send needs a recipient (to) or a direct conversation id',
    );
  }
  const peer = await session.peers.encryptionKeyFor(to);
  const conversationId = directConversationId(me.agent_number, peer.agentNumber);
  if (s.conversation_id !== undefined && s.conversation_id !== conversationId) {
    throw new DaemonError(
      'conversation_mismatch',
      `${s.conversation_id} is not the direct conversation with ${peer.agentNumber} (${conversationId}).`,
    );
  }
  const header = createEnvelopeHeader({
    sender: me.agent_number,
    recipient: peer.agentNumber,
    conversation_id: conversationId,
    conversation_type: 'direct',
    content_type: contentType as EnvelopeContentType,
    deployment_id: me.deployment_id,
    tenant_id: me.tenant_id,
  });
  const envelope = sealEnvelope({
    header,
    plaintext: utf8(content),
    recipientX25519Public: peer.key,
    senderEd25519Private: session.keys().signPrivate,
  });
  const res = await session.relay.call<{ results: Array<{ message_id: string; status: 'accepted' | 'duplicate' }> }>({
    method: 'POST',
    path: '/api/v1/messages',
    body: { envelopes: [envelope] },
  });
  const status = res.results[0]?.status ?? 'accepted';
  session.archive.insertMessage({
    message_id: header.message_id,
    conversation_id: conversationId,
    conversation_type: 'direct',
    direction: 'outbound',
    from: me.agent_number,
    to: peer.agentNumber,
    content_type: contentType,
    content,
    sent_at: header.sent_at,
    received_at: null,
    acked_at: null,
    delivered_at: null,
    envelope: JSON.stringify(envelope),
  });
  session.log.info({ agent: me.name, message_id: header.message_id, to: peer.agentNumber, status }, 'message sent');
  return {
    message_id: header.message_id,
    conversation_id: conversationId,
    to: peer.agentNumber,
    sent_at: header.sent_at,
    status,
  };
}

export async function replyTo(session: AgentSession, input: ReplyInput): Promise<SentMessage> {
  const original = session.archive.getMessage(input.message_id);
  if (!original) throw new DaemonError('unknown_message', `No archived message ${input.message_id}.`);
  const to = input.to ?? (original.direction === 'inbound' ? original.from : original.to);
  return sendMessage({
    session,
    to,
    content: input.content,
    content_type: input.content_type,
    // direct only: the conversation follows from the recipient (an archive from before ids
    // were checked may hold a spoofed one, which must not steer the reply)
  });
}
