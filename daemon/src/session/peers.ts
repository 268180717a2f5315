/**
 * Peer keys: looked up in the relay's key directory and pinned on first use (the signing
 * key is the identity). The relay is not trusted with keys, so every directory answer is
 * checked here:
 * - it must name the agent asked for, in our own deployment and tenant, or it is refused
 *   (`peer_directory_mismatch`): a relay cannot redirect a send to another agent;
 * - once a peer is pinned, a new encryption key is taken only as a higher version signed
 *   by the pinned signing key (version 1 too: enrollment signs it); an unsigned, older,
 *   same-version or wrongly signed record never replaces the pin, which stays in use;
 * - a different signing key is never trusted silently: when its record verifies under it
 *   (the signature binds the encryption key to it), it is recorded as `changed`, a
 *   peer_key_changed event goes out, sending to that peer fails with peer_key_changed and
 *   its inbound envelopes are held until the owner accepts the new key; accepting takes the
 *   directory's record again and checks it again. A new signing key whose record it does not
 *   sign is refused: sends fail with peer_key_invalid and nothing is offered for acceptance.
 * A pin made without a version (an agent of this machine, pinned on delivery) learns it from
 * a record the pinned key signs (versionOfPin) before it takes any newer one.
 * First contact pins on trust: a signed record must verify under its own key. An unsigned
 * version 1 (an agent enrolled before version 1 was signed) is pinned as version 0
 * (UNBOUND_VERSION): its signing key verifies the peer's messages, but nothing is sealed to
 * its encryption key, which no signature binds to the signing key owners compare (the relay
 * may have paired the peer's real signing key with an encryption key of its own). Sends
 * fail with peer_key_unsigned until the directory serves a record the pinned key signs
 * (the peer's `svc keys backfill`), which any version then is.
 */
import {
  ed25519PublicKeyProblem,
  fromBase64url,
  type KeyDirectoryEntry,
  type KeyRecord,
  keyRecordBytes,
  x25519PublicKeyProblem,
} from '@svc/shared';
import { ed25519Verify } from '@svc/shared/node';
import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/store.js';
import type { Archive, PeerPin } from '../archive/archive.js';
import { DaemonError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { AgentRelay } from './agent-relay.js';

/**
 * The version of a pin taken from an unsigned record: below every real version, so the
 * first record the pinned signing key signs replaces it, and never sealed to.
 */
export const UNBOUND_VERSION = 0;

export class Peers {
  readonly #me: () => AgentConfig;
  readonly #archive: Archive;
  readonly #relay: AgentRelay;
  readonly #events: EventBus;
  readonly #log: Logger | undefined;

  constructor(me: () => AgentConfig, archive: Archive, relay: AgentRelay, events: EventBus, log?: Logger) {
    this.#me = me;
    this.#archive = archive;
    this.#relay = relay;
    this.#events = events;
    this.#log = log;
  }

  /** The directory's answer for `ref` (agent number or id), refused unless it names that agent of our tenant. */
  async directory(ref: string): Promise<KeyDirectoryEntry> {
    const entry = await this.#relay.call<KeyDirectoryEntry>({
      method: 'GET',
      path: `/api/v1/agents/${encodeURIComponent(ref)}/keys`,
      timeoutMs: 15_000,
    });
    const me = this.#me();
    if (entry.deployment_id !== me.deployment_id || entry.tenant_id !== me.tenant_id) {
      throw this.#mismatch(ref, 'another deployment or tenant');
    }
    // A pinned number is answered by that number only; else the ref may be a number or an id.
    const named = this.#archive.getPeer(ref)
      ? entry.agent_number === ref
      : entry.agent_number === ref || entry.agent_id === ref;
    if (!named) throw this.#mismatch(ref, `agent ${entry.agent_number}`);
    // by id: a pinned agent keeps the id it was pinned with (a relabelled entry is another agent)
    const pinned = entry.agent_number === ref ? undefined : this.#archive.getPeer(entry.agent_number);
    if (pinned?.agent_id && pinned.agent_id !== entry.agent_id) {
      throw this.#mismatch(ref, `agent ${entry.agent_number} (pinned as ${pinned.agent_id})`);
    }
    // by id: a pinned agent keeps the number it was pinned with; an answer that moves its id
    // to another number would be a first contact the relay chose (its keys, a fresh pin)
    const moved =
      entry.agent_number === ref ? undefined : this.#archive.peerWithIdElsewhere(entry.agent_id, entry.agent_number);
    if (moved)
      throw this.#mismatch(ref, `agent ${entry.agent_number}, while ${ref} is pinned as ${moved.agent_number}`);
    return entry;
  }

  #mismatch(ref: string, what: string): DaemonError {
    this.#log?.warn({ agent: this.#me().name, peer: ref, answered: what }, 'key directory answered for another agent');
    return new DaemonError(
      'peer_directory_mismatch',
      `The relay answered the key lookup of ${ref} with the keys of ${what}; nothing was sent. Ask the relay's operator to check it.`,
    );
  }

  /**
   * Why a record's keys cannot be used, if they cannot: a small-order or non-canonical key
   * signs "everything" (Ed25519) or gives a shared secret anyone knows (X25519), so the
   * relay's own checks at enrollment are not relied on.
   */
  static keyProblem(record: KeyRecord): string | undefined {
    try {
      return (
        ed25519PublicKeyProblem(fromBase64url(record.signing_public_key)) ??
        x25519PublicKeyProblem(fromBase64url(record.encryption_public_key))
      );
    } catch {
      return 'a key is not base64url';
    }
  }

  #invalid(ref: string, problem: string): DaemonError {
    this.#log?.warn({ agent: this.#me().name, peer: ref, problem }, 'unusable peer key refused');
    return new DaemonError(
      'peer_key_invalid',
      `The relay served a key for ${ref} that cannot be used safely (${problem}); nothing was sent. Ask the relay's operator to check it.`,
    );
  }

  /** True when `record` is signed by `signingKey` over the statement of this entry's agent. */
  static recordSignedBy(entry: KeyDirectoryEntry, record: KeyRecord, signingKey: string): boolean {
    if (record.signature === null) return false;
    try {
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
    } catch {
      return false; // a key or signature that is not base64url (the relay's answer, not trusted)
    }
  }

  /**
   * The version of a pin made without one (an agent of this machine pinned on delivery, or
   * an older daemon's `svc keys accept`): the highest version among the entry's records
   * that carry exactly the pinned keys and that the pinned signing key signs. A relay can
   * neither forge such a record nor, by leaving it out, get an older one taken: without a
   * version the pin takes no new encryption key.
   */
  static versionOfPin(entry: KeyDirectoryEntry, pin: PeerPin): number | undefined {
    let found: number | undefined;
    for (const r of [entry.current, ...entry.history]) {
      if (
        r.signing_public_key === pin.signing_public_key &&
        r.encryption_public_key === pin.encryption_public_key &&
        r.version > (found ?? 0) &&
        Peers.recordSignedBy(entry, r, pin.signing_public_key)
      ) {
        found = r.version;
      }
    }
    return found;
  }

  /**
   * Whether nothing binds the pin's encryption key to its signing key, so that nothing may be
   * sealed to it: a pin taken from an unsigned record (UNBOUND_VERSION), or a version 1 pin
   * whose keys no record in the directory carries under the pinned key's signature (an
   * earlier daemon recorded an unsigned version 1 as version 1; every other version was
   * taken only with that signature, so a relay that hides the record later changes nothing
   * for it). An unbound pin takes the first record its signing key signs, whatever its
   * version: for a version 1 pin that only the directory shows unbound (a relay hiding the
   * record), no version lies below, so nothing can be rolled back, and a record the peer's
   * key signs is the peer's own. A pin made without a version (an agent of this machine,
   * from its own keys) is bound by where it came from.
   */
  static unbound(entry: KeyDirectoryEntry, pin: PeerPin): boolean {
    if (pin.key_version === UNBOUND_VERSION) return true;
    return pin.key_version === 1 && Peers.versionOfPin(entry, pin) === undefined;
  }

  /**
   * Why a record carrying a new signing key cannot be offered for acceptance, if it cannot:
   * an unusable key, or a record that key does not sign (the owner checks the signing key's
   * fingerprint, and only that signature binds the encryption key to it).
   */
  static newKeyProblem(entry: KeyDirectoryEntry, record: KeyRecord): string | undefined {
    return (
      Peers.keyProblem(record) ??
      (Peers.recordSignedBy(entry, record, record.signing_public_key) ? undefined : 'record not signed by its key')
    );
  }

  /**
   * Reconciles the pin with the directory; returns the pin, the directory's answer and
   * whether the pin is unbound (see `unbound`; judged where the directory serves the pinned
   * signing key, false elsewhere: nothing is sealed to a pin whose key changed).
   */
  async refresh(ref: string): Promise<{ pin: PeerPin; entry: KeyDirectoryEntry; unbound: boolean }> {
    const entry = await this.directory(ref);
    const cur = entry.current;
    const pin = this.#archive.getPeer(entry.agent_number);
    const unusable = Peers.keyProblem(cur);
    let unbound = false;
    if (!pin) {
      // trust on first use; an unsigned version 1 is an agent enrolled before it was signed
      const legacy = cur.version === 1 && cur.signature === null;
      if (!legacy && !Peers.recordSignedBy(entry, cur, cur.signing_public_key)) {
        throw new DaemonError('peer_key_changed', `the key record of ${ref} does not verify`);
      }
      if (unusable) throw this.#invalid(ref, unusable);
      if (legacy) {
        this.#log?.warn(
          { agent: this.#me().name, peer: entry.agent_number },
          'peer pinned from an unsigned key record: nothing is sealed to it until it publishes a signed one',
        );
      }
      this.#archive.pinPeer({
        agent_number: entry.agent_number,
        agent_id: entry.agent_id,
        signing_public_key: cur.signing_public_key,
        encryption_public_key: cur.encryption_public_key,
        key_version: legacy ? UNBOUND_VERSION : cur.version,
      });
      unbound = legacy;
    } else if (pin.signing_public_key === cur.signing_public_key) {
      // the directory serves the pinned key again: a change it showed before is gone
      if (pin.changed) this.#archive.clearPeerChange(entry.agent_number);
      // an unbound pin takes the first record the pinned key signs, whatever its version
      unbound = Peers.unbound(entry, pin);
      if (unbound && pin.key_version === 1) {
        // an earlier daemon's pin of an unsigned version 1: recorded as what it is, so that
        // `svc keys status` says UNSIGNED (version 0 and this version 1 are judged alike)
        this.#archive.pinPeer({ ...pin, key_version: UNBOUND_VERSION });
      }
      const known = unbound ? UNBOUND_VERSION : (pin.key_version ?? Peers.versionOfPin(entry, pin));
      if (
        known !== undefined &&
        !unusable &&
        cur.version > known &&
        Peers.recordSignedBy(entry, cur, pin.signing_public_key)
      ) {
        this.#archive.pinPeer({ ...pin, encryption_public_key: cur.encryption_public_key, key_version: cur.version });
        unbound = false; // the pin now holds a record its key signs
      } else {
        // the version of a pin made without one, learned from a record it signs
        if (known !== undefined && pin.key_version === null) this.#archive.pinPeer({ ...pin, key_version: known });
        if (pin.encryption_public_key !== cur.encryption_public_key) {
          // unsigned, older, same version, not signed by the pin, or newer than a pin whose
          // version is unknown: the pin stays in use (the peer still opens what is sealed to it)
          this.#log?.warn(
            { agent: this.#me().name, peer: entry.agent_number, version: cur.version, pinned: known ?? null },
            'key directory record refused: not a newer version signed by the pinned key',
          );
        }
      }
    } else {
      // A changed signing key is offered for acceptance only with a record it signs (else the
      // relay could pair the peer's new signing key with an encryption key of its own).
      const problem = Peers.newKeyProblem(entry, cur);
      if (problem) {
        this.#log?.warn({ agent: this.#me().name, peer: entry.agent_number, problem }, 'changed peer key refused');
      } else if (pin.changed?.signing_public_key !== cur.signing_public_key) {
        this.#archive.markPeerChanged(entry.agent_number, cur.signing_public_key, cur.encryption_public_key);
        this.#events.emit({ type: 'peer_key_changed', agent: this.#me().name, peer: entry.agent_number });
      }
    }
    return { pin: this.#archive.getPeer(entry.agent_number) as PeerPin, entry, unbound };
  }

  /** The encryption key to seal to; refuses a peer whose key changed and is not accepted. */
  async encryptionKeyFor(ref: string): Promise<{ agentNumber: string; key: Uint8Array }> {
    const { pin, entry, unbound } = await this.refresh(ref);
    if (pin.changed) {
      throw new DaemonError(
        'peer_key_changed',
        `The signing key of ${pin.agent_number} changed; check \`svc keys status\` and accept it to continue.`,
      );
    }
    // a new signing key refused above: the peer may no longer hold the pinned keys, so nothing is sealed to them
    if (entry.current.signing_public_key !== pin.signing_public_key) {
      throw this.#invalid(ref, 'a new signing key whose record it does not sign, or an unusable key');
    }
    if (unbound) {
      throw new DaemonError(
        'peer_key_unsigned',
        `The relay serves only an unsigned key record for ${pin.agent_number} (an agent enrolled before key records were signed): its encryption key is bound to nothing ${pin.agent_number}'s signing key signed, so nothing was sent. Ask its owner to run \`svc keys backfill\`; the next send then uses the signed key.`,
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
