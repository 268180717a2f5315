/**
 * One inbound envelope, from the stream, a pending page or the held queue: verify the
 * signature with the sender's pinned key, open it with our key, archive it, announce it.
 * The archive is what tells a replay: an id it holds is a duplicate; an id it does not hold
 * is taken, also when an earlier try failed before archiving it (that try was no delivery). A tampered or undecryptable envelope is never archived: it is
 * recorded as rejected and reported. Network failures throw (the caller retries later
 * without acking), every other outcome is final (the caller acks on the relay).
 */
import {
  type Envelope,
  fromBase64url,
  type IdentityKeys,
  isEnvelopeError,
  parseEnvelope,
  truncated,
} from '@svc/shared';
import { openEnvelope, verifyEnvelope } from '@svc/shared/node';
import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/store.js';
import type { Archive } from '../archive/archive.js';
import type { ArchivedMessage } from '../client/api.js';
import { decodePayload, type GroupPayload } from '../conversations/payload.js';
import { activeMember, deriveRoster, mayReach, parseGroupId, type Roster } from '../conversations/roster.js';
import { type Arrival, classifyArrival, type SequenceNote } from '../conversations/sequence.js';
import { DaemonError, RelayError } from '../errors.js';
import type { EventBus } from '../events.js';
import { directConversationId } from '../messaging/conversation-id.js';
import { recordSenderKey } from '../messaging/trust.js';
import { relayCode } from '../relay/http.js';
import type { Peers } from './peers.js';

/** Answers to a sender's key lookup that say it is about that sender, not the session (401, 408, 429, 5xx are). */
const SENDER_LOOKUP_REFUSED = new Set([400, 404, 413, 414, 422]);

export type InboundOutcome = 'archived' | 'duplicate' | 'held' | 'rejected';

export interface InboundItem {
  message_id: string;
  sender: string;
  envelope: unknown;
  accepted_at?: string;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** A message id or sender as the relay gave it, as text of at most 128 characters (ids and numbers are shorter). */
const said = (v: unknown): string => {
  const text = typeof v === 'string' ? v : String(JSON.stringify(v));
  return truncated(text, 128);
};

export class InboundProcessor {
  readonly #agent: () => AgentConfig;
  readonly #archive: Archive;
  readonly #peers: Peers;
  readonly #events: EventBus;
  readonly #keys: (rotation: number) => IdentityKeys;
  readonly #log: Logger;
  readonly #isMuted: (sender: string) => boolean;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(opts: {
    agent: () => AgentConfig;
    archive: Archive;
    peers: Peers;
    events: EventBus;
    keys: (rotation: number) => IdentityKeys;
    log: Logger;
    /** a sender the agent muted: its messages are archived, marked muted, and announced to no one */
    isMuted?: (sender: string) => boolean;
  }) {
    this.#agent = opts.agent;
    this.#archive = opts.archive;
    this.#peers = opts.peers;
    this.#events = opts.events;
    this.#keys = opts.keys;
    this.#log = opts.log;
    this.#isMuted = opts.isMuted ?? (() => false);
  }

  /** Serialized: the stream, a sync and an accept-key never interleave on one archive. */
  process(item: InboundItem, opts: { fromHeld?: boolean } = {}): Promise<InboundOutcome> {
    const run = this.#queue.then(() => this.#process(item, opts.fromHeld === true));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #reject(item: InboundItem, reason: string): InboundOutcome {
    const agent = this.#agent().name;
    // the relay's word, of any size or type: what is noted of it is cut short
    const messageId = said(item.message_id);
    const sender = said(item.sender);
    this.#archive.recordRejected(messageId, sender, reason);
    this.#log.warn({ agent, message_id: messageId, sender, reason }, 'envelope rejected');
    this.#events.emit({ type: 'rejected', agent, message_id: messageId, from: sender, reason });
    return 'rejected';
  }

  /**
   * Why a group or broadcast envelope is refused, if it is: the receiver must be in the
   * conversation (per the roster it derived), and the sender allowed to post there; a
   * roster change must come from the creator (create, invite) or the member leaving, and
   * a conversation the receiver does not know is taken only from a control message that
   * puts it in. Nothing refused is archived.
   */
  #groupRefusal(conversationId: string, sender: string, messageId: string, payload: GroupPayload): string | undefined {
    const me = this.#agent().agent_number;
    const controls = this.#archive.controls(conversationId);
    const before = deriveRoster(conversationId, controls);
    if (payload.control === undefined) {
      if (!before || !activeMember(before, me)) return 'not_a_member';
      return mayReach(before, sender, me) ? undefined : 'not_allowed_to_post';
    }
    const body = payload.control;
    const after = () => deriveRoster(conversationId, [...controls, { message_id: messageId, sender, body }]);
    if (body.op === 'leave') {
      if (!before || !activeMember(before, me)) return 'not_a_member';
      if (!activeMember(before, sender)) return 'not_a_member';
      // a leave whose id is older than what put the sender in changes nothing, now or ever
      // (each register only moves to a later id): not kept, so a member cannot pile up
      // leaves stamped in the past that every later arrival would re-read
      return activeMember(after() as Roster, sender) ? 'leave_superseded' : undefined;
    }
    if (sender !== parseGroupId(conversationId)?.creator) return 'not_conversation_creator';
    // taken when it reaches a member, or makes us one
    if (before && activeMember(before, me)) return undefined;
    const next = after();
    return next && activeMember(next, me) ? undefined : 'not_a_member';
  }

  #reportSequence(
    agent: string,
    conversationId: string,
    sender: string,
    messageId: string,
    seq: number,
    a: Arrival,
  ): void {
    if (a.kind === 'in_order') return;
    this.#log.warn(
      { agent, conversation_id: conversationId, sender, message_id: messageId, seq, kind: a.kind },
      'group message out of order',
    );
    this.#events.emit({
      type: 'sequence',
      agent,
      conversation_id: conversationId,
      sender,
      message_id: messageId,
      seq,
      kind: a.kind,
      ...(a.note?.gap ? { missing: a.note.gap } : {}),
    });
  }

  /** The same envelope again (same message id): a group message's arrival count goes up, and it is reported. */
  #reportDuplicate(messageId: string): void {
    const held = this.#archive.noteDuplicate(messageId);
    if (held)
      this.#reportSequence(this.#agent().name, held.conversation_id, held.sender, messageId, held.seq, {
        kind: 'duplicate',
      });
  }

  async #process(item: InboundItem, fromHeld: boolean): Promise<InboundOutcome> {
    const me = this.#agent();
    let env: Envelope;
    try {
      env = parseEnvelope(item.envelope);
    } catch {
      return this.#reject(item, 'envelope_malformed');
    }
    const h = env.header;
    // The relay authenticated the sender; the signed header must agree with it.
    if (h.sender !== item.sender || h.message_id !== item.message_id) return this.#reject(item, 'sender_mismatch');
    if (h.recipient !== me.agent_number) return this.#reject(item, 'envelope_wrong_recipient');
    if (h.deployment_id !== me.deployment_id || h.tenant_id !== me.tenant_id) {
      return this.#reject(item, 'envelope_binding_mismatch');
    }
    const held = this.#archive.getMessage(h.message_id)?.from;
    if (held !== undefined) {
      // the id is another sender's (a member copying an id it saw, or one of our own
      // sends): not a repeat of that message, and never counted as one
      if (held !== h.sender) return this.#reject(item, 'message_id_conflict');
      this.#reportDuplicate(h.message_id);
      return 'duplicate';
    }

    let pinned: string;
    try {
      pinned = await this.#peers.signingKeyFor(h.sender);
    } catch (err) {
      // an unknown sender, or a key record that does not verify, is final; a network failure is not
      if (relayCode(err) === 'not_found') return this.#reject(item, 'unknown_sender');
      if (err instanceof DaemonError && err.code === 'peer_key_changed')
        return this.#reject(item, 'sender_key_invalid');
      if (err instanceof DaemonError && err.code === 'peer_directory_mismatch')
        return this.#reject(item, 'sender_directory_mismatch');
      // the relay refuses this sender's lookup as such (a malformed or overlong number): final
      // for this envelope; thrown, it would stop every later envelope behind it
      if (err instanceof RelayError && SENDER_LOOKUP_REFUSED.has(err.relayStatus))
        return this.#reject(item, 'sender_lookup_refused');
      throw err;
    }
    if (!verifyEnvelope(env, fromBase64url(pinned))) {
      const changed = fromHeld ? undefined : await this.#peers.changedSigningKey(h.sender);
      if (changed !== undefined && verifyEnvelope(env, fromBase64url(changed))) {
        const dropped = this.#archive.hold(h.message_id, h.sender, JSON.stringify(env));
        this.#log.warn(
          { agent: me.name, message_id: h.message_id, sender: h.sender, ...(dropped > 0 ? { dropped } : {}) },
          dropped > 0
            ? 'envelope held: sender key changed (the oldest held of that sender dropped)'
            : 'envelope held: sender key changed',
        );
        return 'held';
      }
      return this.#reject(item, 'envelope_bad_signature');
    }
    // a direct id follows from the verified parties; a group id names its kind and creator, never dm:
    if (h.conversation_type === 'direct') {
      if (h.conversation_id !== directConversationId(h.sender, me.agent_number)) {
        return this.#reject(item, 'conversation_mismatch');
      }
      // a roster change exists only in a group or broadcast; a direct one would be mail that
      // `conv search` (which leaves control messages out) never finds
      if (h.content_type === 'control') return this.#reject(item, 'content_type_mismatch');
    } else if (parseGroupId(h.conversation_id)?.kind !== h.conversation_type) {
      return this.#reject(item, 'conversation_mismatch');
    }

    let plaintext: Uint8Array | undefined;
    for (let r = me.rotation; r >= 0 && plaintext === undefined; r--) {
      try {
        plaintext = openEnvelope(env, this.#keys(r).encPrivate, {
          expectedRecipient: me.agent_number,
          expectedDeploymentId: me.deployment_id,
          expectedTenantId: me.tenant_id,
        });
      } catch (err) {
        // sealed to an earlier X25519 key: try the previous rotation
        if (!isEnvelopeError(err, 'envelope_decrypt_failed'))
          return this.#reject(item, (err as { code?: string }).code ?? 'envelope_invalid');
      }
    }
    if (plaintext === undefined) return this.#reject(item, 'envelope_decrypt_failed');
    let content: string;
    try {
      content = decoder.decode(plaintext);
    } catch {
      return this.#reject(item, 'envelope_not_utf8');
    }
    let group: { seq: number; note?: SequenceNote; arrival: Arrival; control: boolean } | undefined;
    if (h.conversation_type !== 'direct') {
      const payload = decodePayload(content);
      if (!payload || (h.content_type === 'control') !== (payload.control !== undefined)) {
        return this.#reject(item, 'group_payload_invalid');
      }
      const refusal = this.#groupRefusal(h.conversation_id, h.sender, h.message_id, payload);
      if (refusal) return this.#reject(item, refusal);
      const seen = this.#archive.seqState(h.conversation_id, h.sender, payload.seq);
      const arrival = classifyArrival(payload.seq, seen.highest, (n) => n === payload.seq && seen.held);
      // the same number under another message id: only the sender can make one, and it is not taken twice
      if (arrival.kind === 'duplicate') {
        this.#reportSequence(me.name, h.conversation_id, h.sender, h.message_id, payload.seq, arrival);
        return this.#reject(item, 'sequence_duplicate');
      }
      content = payload.control !== undefined ? JSON.stringify(payload.control) : payload.body;
      group = {
        seq: payload.seq,
        arrival,
        control: payload.control !== undefined,
        ...(arrival.note ? { note: arrival.note } : {}),
      };
    }
    const receivedAt = new Date().toISOString();
    const message: ArchivedMessage = {
      message_id: h.message_id,
      conversation_id: h.conversation_id,
      conversation_type: h.conversation_type,
      direction: 'inbound',
      from: h.sender,
      to: h.recipient,
      content_type: h.content_type,
      content,
      sent_at: h.sent_at,
      received_at: receivedAt,
      // a roster change is bookkeeping, not mail: it never waits in the inbox
      acked_at: group?.control ? receivedAt : null,
      delivered_at: null,
      state: group?.control ? 'read' : 'received',
      muted: this.#isMuted(h.sender),
    };
    if (group) {
      message.seq = group.seq;
      if (group.note) message.sequence = group.note;
    }
    const row = {
      ...message,
      envelope: JSON.stringify(env),
      ...(group ? { conv_seq: group.seq, ...(group.note ? { seq_note: group.note } : {}) } : {}),
    };
    if (!this.#archive.insertMessage(row)) return 'duplicate';
    recordSenderKey(this.#archive, h.message_id, pinned);
    if (group && group.arrival.kind !== 'in_order') {
      this.#reportSequence(me.name, h.conversation_id, h.sender, h.message_id, group.seq, group.arrival);
    }
    if (group?.control) this.#events.emit({ type: 'roster', agent: me.name, conversation_id: h.conversation_id });
    this.#log.info(
      { agent: me.name, message_id: h.message_id, sender: h.sender, muted: message.muted },
      'message archived',
    );
    if (!message.muted && !group?.control) this.#events.emit({ type: 'message', agent: me.name, message });
    return 'archived';
  }
}
