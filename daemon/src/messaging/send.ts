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

const CONTENT_TYPES: readonly ContentType[] = ['text', 'structured', 'media'];

export const directConversationId = (a: string, b: string): string => `dm:${[a, b].sort().join(':')}`;

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
  let to = s.to;
  if (!to && s.conversation_id) {
    const peer = session.archive.db
      .prepare(`SELECT peer FROM conversations WHERE conversation_id = ? AND conversation_type = 'direct'`)
      .get(s.conversation_id) as { peer: string } | undefined;
    to = peer?.peer ?? '';
  }
  if (!to) throw new DaemonError('validation_failed', 'send needs a recipient (to) or a known direct conversation id');
  if (s.conversation_id !== undefined && !ENVELOPE_ID_PATTERN.test(s.conversation_id)) {
    throw new DaemonError('validation_failed', 'conversation_id may use letters, digits and ._:@- (1 to 256)');
  }
  const peer = await session.peers.encryptionKeyFor(to);
  const conversationId = s.conversation_id ?? directConversationId(me.agent_number, peer.agentNumber);
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
    // a reply to someone else than the conversation's peer starts their direct conversation
    conversation_id:
      input.to && input.to !== original.from && input.to !== original.to ? undefined : original.conversation_id,
  });
}
