/**
 * One inbound envelope, from the stream, a pending page or the held queue: verify the
 * signature with the sender's pinned key, open it with our key, refuse replays, archive
 * it, announce it. A tampered or undecryptable envelope is never archived: it is
 * recorded as rejected and reported. Network failures throw (the caller retries later
 * without acking), every other outcome is final (the caller acks on the relay).
 */
import {
  type Envelope,
  fromBase64url,
  type IdentityKeys,
  isEnvelopeError,
  parseEnvelope,
  ReplayGuard,
} from '@svc/shared';
import { openEnvelope, verifyEnvelope } from '@svc/shared/node';
import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/store.js';
import type { Archive } from '../archive/archive.js';
import type { ArchivedMessage } from '../client/api.js';
import { DaemonError } from '../errors.js';
import type { EventBus } from '../events.js';
import { directConversationId } from '../messaging/conversation-id.js';
import { recordSenderKey } from '../messaging/trust.js';
import { relayCode } from '../relay/http.js';
import type { Peers } from './peers.js';

export type InboundOutcome = 'archived' | 'duplicate' | 'held' | 'rejected';

export interface InboundItem {
  message_id: string;
  sender: string;
  envelope: unknown;
  accepted_at?: string;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

export class InboundProcessor {
  readonly #agent: () => AgentConfig;
  readonly #archive: Archive;
  readonly #peers: Peers;
  readonly #events: EventBus;
  readonly #keys: (rotation: number) => IdentityKeys;
  readonly #log: Logger;
  readonly #isMuted: (sender: string) => boolean;
  readonly #replay = new ReplayGuard();
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
    this.#archive.recordRejected(item.message_id, item.sender, reason);
    this.#log.warn({ agent, message_id: item.message_id, sender: item.sender, reason }, 'envelope rejected');
    this.#events.emit({ type: 'rejected', agent, message_id: item.message_id, from: item.sender, reason });
    return 'rejected';
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
    if (this.#archive.hasMessage(h.message_id)) return 'duplicate';

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
      throw err;
    }
    if (!verifyEnvelope(env, fromBase64url(pinned))) {
      const changed = fromHeld ? undefined : await this.#peers.changedSigningKey(h.sender);
      if (changed !== undefined && verifyEnvelope(env, fromBase64url(changed))) {
        this.#archive.hold(h.message_id, h.sender, JSON.stringify(env));
        this.#log.warn(
          { agent: me.name, message_id: h.message_id, sender: h.sender },
          'envelope held: sender key changed',
        );
        return 'held';
      }
      return this.#reject(item, 'envelope_bad_signature');
    }
    // only direct conversations exist, and their id follows from the verified parties
    if (h.conversation_type !== 'direct' || h.conversation_id !== directConversationId(h.sender, me.agent_number)) {
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
    if (!this.#replay.accept(h.sender, h.message_id)) return this.#reject(item, 'envelope_replayed');

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
      received_at: new Date().toISOString(),
      acked_at: null,
      delivered_at: null,
      state: 'received',
      muted: this.#isMuted(h.sender),
    };
    if (!this.#archive.insertMessage({ ...message, envelope: JSON.stringify(env) })) return 'duplicate';
    recordSenderKey(this.#archive, h.message_id, pinned);
    this.#log.info(
      { agent: me.name, message_id: h.message_id, sender: h.sender, muted: message.muted },
      'message archived',
    );
    if (!message.muted) this.#events.emit({ type: 'message', agent: me.name, message });
    return 'archived';
  }
}
