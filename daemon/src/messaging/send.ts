/**
 * send / reply: seal to the peer's pinned encryption key with our identity key, hand the
 * envelope to the relay, archive the outbound message. The relay treats the message id
 * as an idempotency key, so a retried send is reported as `duplicate`, never doubled.
 *
 * Local-first: when the relay cannot be reached, the sealed envelope is archived as
 * `queued` and the session's outbox posts the same envelope (same message id) when the
 * relay answers again. Sealing needs the peer's pinned key, so a peer never contacted
 * cannot be queued for.
 */
import {
  contentTooLargeMessage,
  createEnvelopeHeader,
  ENVELOPE_ID_PATTERN,
  fromBase64url,
  MESSAGE_LIMITS,
  type SendResponse,
  utf8,
} from '@svc/shared';
import { sealEnvelope } from '@svc/shared/node';
import { isLocalOnly } from '../agents/local-agent.js';
import type { OutOfServiceAgent } from '../agents/manager.js';
import { outOfServicePeer, recipientOutOfService } from '../agents/out-of-service.js';
import { CONTENT_TYPES, type ContentType, type ReplyInput, type SendInput, type SentMessage } from '../client/api.js';
import { parseDescriptor } from '../client/attachment.js';
import { sendToConversation } from '../conversations/groups.js';
import { malformedGroupId, parseGroupId } from '../conversations/roster.js';
import { DaemonError, RelayError } from '../errors.js';
import { relayCode } from '../relay/http.js';
import type { AgentSession } from '../session/session.js';
import { uploadAttachment } from './attachments.js';
import { directConversationId, directPeer } from './conversation-id.js';

export { directConversationId } from './conversation-id.js';

/**
 * True when the relay did not answer, failed on its side, or asks for the request again
 * (408: it did not get the whole request in time; 429): the envelope can wait in the outbox.
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof RelayError) return err.relayStatus >= 500 || err.relayStatus === 429 || err.relayStatus === 408;
  return err instanceof DaemonError && err.code === 'relay_unreachable';
}

/**
 * Text that UTF-8 can carry: a lone UTF-16 surrogate (JSON's `\ud800`) became U+FFFD on
 * the way, differently in the sender's archive and the recipient's.
 */
function checkWellFormed(text: string, what: string): string {
  const at = text.search(/\p{Cs}/u);
  if (at >= 0) {
    throw new DaemonError(
      'validation_failed',
      `${what} is not valid Unicode text: a lone surrogate (U+${text.charCodeAt(at).toString(16).toUpperCase()}) at character ${at + 1}.`,
    );
  }
  return text;
}

/** Content the relay could never take, said in what the sender controls: its bytes, and to split it. */
export function checkContentSize(content: string): void {
  const bytes = Buffer.byteLength(content);
  if (bytes > MESSAGE_LIMITS.maxContentBytes)
    throw new DaemonError('envelope_too_large', contentTooLargeMessage(bytes));
}

function checkCaption(caption: string): string {
  checkWellFormed(caption, 'The caption');
  checkContentSize(caption);
  return caption;
}

function checkContent(content: unknown, type: ContentType): string {
  if (typeof content !== 'string') throw new DaemonError('validation_failed', 'content must be a string');
  checkWellFormed(content, 'content');
  checkContentSize(content);
  if (content.trim() === '') throw new DaemonError('validation_failed', 'The message is empty; give some content.');
  if (type === 'media' && !parseDescriptor(content)) {
    // media is an attachment's descriptor, which the daemon writes itself (send with file_path)
    throw new DaemonError(
      'validation_failed',
      'content_type media is for attachments: send the file with file_path (svc send --file PATH), not as text.',
    );
  }
  if (type === 'structured') {
    try {
      JSON.parse(content);
    } catch {
      throw new DaemonError('validation_failed', 'structured content must be JSON text');
    }
  }
  return content;
}

/** The agents of this daemon out of service: a local recipient among them is named as such. */
export type OutOfServiceList = () => readonly OutOfServiceAgent[];

export async function sendMessage(
  s: SendInput & { session: AgentSession; outOfService?: OutOfServiceList },
): Promise<SentMessage> {
  const { session } = s;
  const me = session.config;
  const contentType = s.content_type ?? 'text';
  if (!CONTENT_TYPES.includes(contentType)) {
    throw new DaemonError('validation_failed', `content_type must be one of ${CONTENT_TYPES.join(', ')}`);
  }
  if (s.file_path !== undefined && s.conversation_id !== undefined && parseGroupId(s.conversation_id)) {
    throw new DaemonError(
      'validation_failed',
      'Attachments go to a direct recipient only; conversation media is unsupported.',
    );
  }
  // with a file, the content is its caption (may be empty) and the message is its descriptor
  let content = s.file_path !== undefined ? checkCaption(s.content ?? '') : checkContent(s.content, contentType);
  if (s.conversation_id !== undefined && !ENVELOPE_ID_PATTERN.test(s.conversation_id)) {
    throw new DaemonError('validation_failed', 'conversation_id may use letters, digits and ._:@- (1 to 256)');
  }
  // a group or broadcast goes to its roster as this agent derived it, never to a named recipient
  if (s.conversation_id !== undefined && parseGroupId(s.conversation_id)) {
    if (s.to) {
      throw new DaemonError(
        'validation_failed',
        'Give either a recipient or a group/broadcast conversation id, not both.',
      );
    }
    return sendToConversation(session, s.conversation_id, content, contentType as 'text' | 'structured');
  }
  const malformed = s.conversation_id === undefined ? undefined : malformedGroupId(s.conversation_id);
  if (malformed) throw new DaemonError('validation_failed', malformed);
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
  // before any key is looked up (its own would be pinned as a peer's)
  if (to === me.agent_number || to === me.agent_id) throw toItself(to, me.name);
  // an agent of this machine, while the local server runs: its key is the daemon's own, and
  // the envelope goes through the local server (no relay, no hub: it works offline too)
  const edge = session.edge();
  const local = edge ? session.localPeer(to) : undefined;
  const localOnly = isLocalOnly(me);
  if (localOnly && !local) {
    // an agent of this machine that is out of service: say so (its code, the file), not that it is none
    const out = s.outOfService && outOfServicePeer(s.outOfService(), me, to);
    if (out) throw recipientOutOfService(out);
    throw new DaemonError(
      'local_agent_unreachable',
      edge
        ? `${to} is not a local agent of this machine; a --local agent reaches only those.`
        : 'A --local agent sends through the local nats-server: start it with `svc start --local-only`.',
    );
  }
  const peer = local
    ? { agentNumber: local.config.agent_number, key: local.keys().encPublic }
    : await sealingKey(session, to);
  if (peer.agentNumber === me.agent_number) throw toItself(to, me.name);
  const conversationId = directConversationId(me.agent_number, peer.agentNumber);
  if (s.conversation_id !== undefined && s.conversation_id !== conversationId) {
    throw new DaemonError(
      'conversation_mismatch',
      `${s.conversation_id} is not the direct conversation with ${peer.agentNumber} (${conversationId}).`,
    );
  }
  let type: ContentType = contentType;
  if (s.file_path !== undefined) {
    content = await uploadAttachment(session, peer.agentNumber, s.file_path, content);
    type = 'media';
  }
  const header = createEnvelopeHeader({
    sender: me.agent_number,
    recipient: peer.agentNumber,
    conversation_id: conversationId,
    conversation_type: 'direct',
    content_type: type,
    deployment_id: me.deployment_id,
    tenant_id: me.tenant_id,
  });
  const envelope = sealEnvelope({
    header,
    plaintext: utf8(content),
    recipientX25519Public: peer.key,
    senderEd25519Private: session.keys().signPrivate,
  });
  let status: SentMessage['status'] | undefined;
  let deliveredAt: string | undefined;
  if (local && edge) {
    try {
      const answer = await edge.deliverLocal({ message_id: header.message_id, sender: me.agent_number, envelope });
      status = 'accepted';
      if (answer.outcome === 'archived' || answer.outcome === 'duplicate') deliveredAt = answer.received_at;
    } catch (err) {
      if (localOnly) throw err;
      // the same envelope can still go the relay's way
      session.log.warn(
        { agent: me.name, message_id: header.message_id, err: (err as Error).message },
        'local delivery failed; sending through the relay',
      );
    }
  }
  const archived = (state: 'queued' | 'sent') =>
    session.archive.insertMessage({
      message_id: header.message_id,
      conversation_id: conversationId,
      conversation_type: 'direct',
      direction: 'outbound',
      from: me.agent_number,
      to: peer.agentNumber,
      content_type: type,
      content,
      sent_at: header.sent_at,
      received_at: null,
      acked_at: null,
      delivered_at: null,
      envelope: JSON.stringify(envelope),
      send_state: state,
    });
  if (status === undefined) {
    // Kept as queued before it is posted: a daemon stopped while the relay answers finds it
    // in its outbox at the next start and posts it again under its id (the relay answers
    // duplicate if it had it), so the sender's archive never lacks what the relay delivers.
    // The outbox leaves it to this post meanwhile.
    archived('queued');
    status = await firstPost(session, header.message_id, envelope, () => session.archive.dropQueued(header.message_id));
  } else archived('sent');
  if (deliveredAt) {
    // the recipient archived it: what the relay's receipt would say
    session.archive.recordReceipt(header.message_id, peer.agentNumber, 'acked', deliveredAt);
  }
  if (status === 'queued') session.wakeOutbox();
  else
    session.log.info(
      {
        agent: me.name,
        message_id: header.message_id,
        to: peer.agentNumber,
        status,
        ...(local ? { via: 'local' } : {}),
      },
      'message sent',
    );
  return {
    message_id: header.message_id,
    conversation_id: conversationId,
    to: peer.agentNumber,
    sent_at: header.sent_at,
    status,
    state: status === 'queued' ? 'queued' : 'sent',
  };
}

/**
 * The first post of a message its send has just archived as queued: settled sent when the
 * relay takes it. Only the relay's own refusal says it did not take the envelope: `refused`
 * then deals with the archived message (given how many requests went through) and the
 * refusal is thrown. Anything else (no answer, an answer cut short or unreadable) may come
 * after it did: the message stays queued, and the outbox posts it again under its id,
 * which the relay answers as a duplicate. The outbox leaves it to this post meanwhile.
 */
export async function firstPost(
  session: AgentSession,
  messageId: string,
  envelope: unknown,
  refused: (err: RelayError, requestsDone: number) => void,
): Promise<SentMessage['status']> {
  const progress = { requestsDone: 0 };
  session.sending.add(messageId);
  try {
    const status = await postEnvelope(session, envelope, progress);
    session.archive.settleQueued(messageId, 'sent');
    if (status === 'duplicate') {
      // The id was minted for this message and this is its first post: an honest relay has
      // never seen it. It may have dropped the message; only the missing receipt will tell.
      session.log.warn(
        { agent: session.name, message_id: messageId },
        'the relay answered duplicate for a message it had never been sent; if no receipt comes, it may not have stored it',
      );
    }
    return status;
  } catch (err) {
    if (err instanceof RelayError && !isTransient(err)) {
      refused(err, progress.requestsDone);
      throw err;
    }
    session.log.info(
      { agent: session.name, message_id: messageId, err: (err as Error).message },
      'relay unreachable; message queued',
    );
    return 'queued';
  } finally {
    session.sending.delete(messageId);
  }
}

/**
 * Posts one sealed envelope, or the list of a group message (one per member, in requests
 * of at most the relay's batch size); the relay's answer ('duplicate' when it had them all).
 */
export async function postEnvelope(
  session: AgentSession,
  envelope: unknown,
  progress?: { requestsDone: number },
): Promise<'accepted' | 'duplicate'> {
  const all = Array.isArray(envelope) ? envelope : [envelope];
  let accepted = false;
  for (let i = 0; i < all.length; i += MESSAGE_LIMITS.maxEnvelopesPerRequest) {
    const chunk = all.slice(i, i + MESSAGE_LIMITS.maxEnvelopesPerRequest);
    const res = await session.relay.call<SendResponse>({
      method: 'POST',
      path: '/api/v1/messages',
      body: { envelopes: chunk },
      timeoutMs: 15_000,
    });
    if (progress) progress.requestsDone++;
    const results = confirmed(res, chunk);
    if (results.some((r) => r.status !== 'duplicate')) accepted = true;
  }
  return accepted || all.length === 0 ? 'accepted' : 'duplicate';
}

/**
 * The relay's result for each envelope of `chunk` (by message id and recipient). An answer
 * that leaves one out is no confirmation: a 502-like failure, so the envelope waits in the
 * outbox and is posted again under its id rather than taken as sent.
 */
function confirmed(res: unknown, chunk: readonly unknown[]): SendResponse['results'] {
  const results = (res as Partial<SendResponse> | undefined)?.results;
  const key = (x: { message_id?: unknown; recipient?: unknown } | undefined) => `${x?.message_id}\n${x?.recipient}`;
  const byKey = new Map((Array.isArray(results) ? results : []).map((r) => [key(r), r]));
  return chunk.map((e) => {
    const h = (e as { header?: { message_id?: unknown; recipient?: unknown } }).header;
    const r = byKey.get(key(h));
    if (r?.status !== 'accepted' && r?.status !== 'duplicate') {
      throw new RelayError(
        502,
        'internal_error',
        `The relay's answer does not confirm the envelope of ${String(h?.message_id)} to ${String(h?.recipient)}; it is sent again.`,
      );
    }
    return r;
  });
}

/**
 * The peer's encryption key: from the directory (pinning on first use), or, while the
 * relay cannot be reached, the key pinned earlier (unless it is marked changed).
 */
export async function sealingKey(session: AgentSession, to: string): Promise<{ agentNumber: string; key: Uint8Array }> {
  try {
    return await session.peers.encryptionKeyFor(to);
  } catch (err) {
    // the directory no longer (or never) lists it: revoked, deregistered or never enrolled
    if (relayCode(err) === 'not_found') {
      throw new DaemonError(
        'unknown_recipient',
        `${to} is not an agent of your tenant (never enrolled, or revoked/deregistered).`,
      );
    }
    if (!isTransient(err)) throw err;
    const pin = session.archive.getPeer(to);
    if (!pin) {
      throw new DaemonError(
        'relay_unreachable',
        `The relay cannot be reached and ${to} was never contacted, so there is no pinned key to seal to; send again when the relay answers.`,
        { status: 503 },
      );
    }
    if (pin.changed) {
      throw new DaemonError(
        'peer_key_changed',
        `The signing key of ${pin.agent_number} changed; check \`svc keys status\` and accept it to continue.`,
      );
    }
    return { agentNumber: pin.agent_number, key: fromBase64url(pin.encryption_public_key) };
  }
}

export async function replyTo(
  session: AgentSession,
  input: ReplyInput,
  outOfService?: OutOfServiceList,
): Promise<SentMessage> {
  const original = session.archive.getMessage(input.message_id);
  if (!original) throw new DaemonError('unknown_message', `No archived message ${input.message_id}.`);
  // inside a group or broadcast the reply goes to the conversation (a broadcast reply reaches
  // the broadcaster only); --to makes it a direct message instead
  if (input.to === undefined && parseGroupId(original.conversation_id)) {
    if (input.file_path !== undefined) {
      throw new DaemonError(
        'validation_failed',
        'Attachments go to a direct recipient only; conversation media is unsupported (reply with --to AGENT to attach a file for one member).',
      );
    }
    const type = input.content_type ?? 'text';
    return sendToConversation(
      session,
      original.conversation_id,
      checkContent(input.content, type),
      type as 'text' | 'structured',
    );
  }
  const to = input.to ?? (original.direction === 'inbound' ? original.from : original.to);
  return sendMessage({
    session,
    to,
    content: input.content,
    content_type: input.content_type,
    ...(input.file_path === undefined ? {} : { file_path: input.file_path }),
    ...(outOfService ? { outOfService } : {}),
    // direct only: the conversation follows from the recipient (an archive from before ids
    // were checked may hold a spoofed one, which must not steer the reply)
  });
}

/** The archive keeps a message once, as sent: one to the agent itself would never show as received. */
function toItself(to: string, name: string): DaemonError {
  return new DaemonError(
    'cannot_target_self',
    `${to === name ? `${to} is the sending agent` : `${to} is ${name} itself`}: an agent cannot send to itself; send to another agent (svc agent list shows this machine's).`,
  );
}
