/**
 * Peer keys: looked up in the relay's key directory and pinned on first use (the signing
 * key is the identity). A directory answer whose signing key differs from the pin is
 * never trusted silently: it is recorded as `changed`, a peer_key_changed event goes out,
 * sending to that peer fails with peer_key_changed and its inbound envelopes are held
 * until the owner accepts the new key. A new encryption key under the same signing key
 * (a `keys generate` rotation) is taken when its record verifies under the pinned key.
 */
import { fromBase64url, type KeyDirectoryEntry, type KeyRecord, keyRecordBytes } from '@svc/shared';
import { ed25519Verify } from '@svc/shared/node';
import type { Archive, PeerPin } from '../archive/archive.js';
import { DaemonError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { AgentRelay } from './agent-relay.js';

export class Peers {
  readonly #agent: string;
  readonly #archive: Archive;
  readonly #relay: AgentRelay;
  readonly #events: EventBus;

  constructor(agent: string, archive: Archive, relay: AgentRelay, events: EventBus) {
    this.#agent = agent;
    this.#archive = archive;
    this.#relay = relay;
    this.#events = events;
  }

  async directory(number: string): Promise<KeyDirectoryEntry> {
    return this.#relay.call<KeyDirectoryEntry>({
      method: 'GET',
      path: `/api/v1/agents/${encodeURIComponent(number)}/keys`,
      timeoutMs: 15_000,
    });
  }

  /** True when a record is signed by `signingKey` (version 1 is vouched for by enrollment). */
  static recordSignedBy(entry: KeyDirectoryEntry, record: KeyRecord, signingKey: string): boolean {
    if (record.version === 1 || record.signature === null) return record.version === 1;
    return ed25519Verify(
      fromBase64url(signingKey),
      keyRecordBytes({
        deployment_id: entry.deployment_id,
        tenant_id: entry.tenant_id,
        agent_id: entry.agent_id,
        agent_number: entry.agent_number,
        version: record.version,
        signing_public_key: record.signing_public_key,
        encryption_public_key: record.encryption_public_key,
        created_at: record.created_at,
      }),
      fromBase64url(record.signature),
    );
  }

  /** Reconciles the pin with the directory; returns the pin and whether it is clean. */
  async refresh(number: string): Promise<{ pin: PeerPin; entry: KeyDirectoryEntry }> {
    const entry = await this.directory(number);
    const cur = entry.current;
    const pin = this.#archive.getPeer(entry.agent_number);
    if (!pin) {
      if (!Peers.recordSignedBy(entry, cur, cur.signing_public_key)) {
        throw new DaemonError('peer_key_changed', `the key record of ${number} does not verify`);
      }
      this.#archive.pinPeer({
        agent_number: entry.agent_number,
        agent_id: entry.agent_id,
        signing_public_key: cur.signing_public_key,
        encryption_public_key: cur.encryption_public_key,
        key_version: cur.version,
      });
    } else if (pin.signing_public_key === cur.signing_public_key) {
      if (
        pin.encryption_public_key !== cur.encryption_public_key &&
        Peers.recordSignedBy(entry, cur, pin.signing_public_key)
      ) {
        this.#archive.pinPeer({ ...pin, encryption_public_key: cur.encryption_public_key, key_version: cur.version });
      }
    } else if (pin.changed?.signing_public_key !== cur.signing_public_key) {
      this.#archive.markPeerChanged(entry.agent_number, cur.signing_public_key, cur.encryption_public_key);
      this.#events.emit({ type: 'peer_key_changed', agent: this.#agent, peer: entry.agent_number });
    }
    return { pin: this.#archive.getPeer(entry.agent_number) as PeerPin, entry };
  }

  /** The encryption key to seal to; refuses a peer whose key changed and is not accepted. */
  async encryptionKeyFor(number: string): Promise<{ agentNumber: string; key: Uint8Array }> {
    const { pin } = await this.refresh(number);
    if (pin.changed) {
      throw new DaemonError(
        'peer_key_changed',
        `The signing key of ${pin.agent_number} changed; check \`svc keys status\` and accept it to continue.`,
      );
    }
    return { agentNumber: pin.agent_number, key: fromBase64url(pin.encryption_public_key) };
  }

  /** The pinned signing key of a sender (pins on first use). */
  async signingKeyFor(number: string): Promise<string> {
    const pin = this.#archive.getPeer(number);
    if (pin) return pin.signing_public_key;
    return (await this.refresh(number)).pin.signing_public_key;
  }

  /** After a signature failed under the pin: the directory's different key, if any. */
  async changedSigningKey(number: string): Promise<string | undefined> {
    const { pin } = await this.refresh(number);
    return pin.changed?.signing_public_key;
  }
}
