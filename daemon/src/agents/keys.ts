/** keys status / generate / upload-signing and accepting a changed peer key. */
import { type KeyDirectoryEntry, type KeyRecord, keyRecordBytes, toBase64url } from '@svc/shared';
import { deriveIdentityKeys, ed25519Sign } from '@svc/shared/node';
import type { PeerPin } from '../archive/archive.js';
import type { KeyBackfill, KeyStatus, PeerKey } from '../client/api.js';
import { ownKeyMismatch } from '../client/own-keys.js';
import { DaemonError } from '../errors.js';
import { Peers, UNBOUND_VERSION } from '../session/peers.js';
import type { AgentSession } from '../session/session.js';
import { loadSeed } from '../vault/index.js';

const publicPeer = (p: PeerPin): PeerKey => ({
  agent_number: p.agent_number,
  signing_public_key: p.signing_public_key,
  encryption_public_key: p.encryption_public_key,
  pinned_at: p.pinned_at,
  ...(p.changed ? { changed: p.changed } : {}),
  ...(p.key_version === UNBOUND_VERSION ? { unsigned: true as const } : {}),
});

/** The relay's current key record of this agent, or why it could not be had (the error's code). */
async function relayRecord(session: AgentSession): Promise<{ record: KeyRecord } | { error: string }> {
  try {
    const entry = await session.relay.call<{ current: KeyRecord }>({ method: 'GET', path: '/api/v1/agents/me/keys' });
    return { record: entry.current };
  } catch (err) {
    session.log.warn({ agent: session.name, err: (err as Error).message }, 'keys: relay key record unavailable');
    return { error: err instanceof DaemonError ? err.code : 'relay_unreachable' };
  }
}

export async function keyStatus(session: AgentSession): Promise<KeyStatus> {
  const c = session.config;
  const relay = await relayRecord(session);
  return {
    agent: c.name,
    signing_public_key: c.signing_public_key,
    encryption_public_key: c.encryption_public_key,
    rotation: c.rotation,
    relay_version: 'record' in relay ? relay.record.version : null,
    // a relay that could not be asked says nothing about what it holds
    ...('error' in relay ? { relay_error: relay.error } : {}),
    peers: session.archive.listPeers().map(publicPeer),
  };
}

async function upload(session: AgentSession, encryptionPublic: string, current: KeyRecord): Promise<KeyRecord> {
  const c = session.config;
  const created_at = new Date().toISOString();
  const signing = c.signing_public_key;
  const bytes = keyRecordBytes({
    deployment_id: c.deployment_id,
    tenant_id: c.tenant_id,
    agent_id: c.agent_id,
    agent_number: c.agent_number,
    version: current.version + 1,
    signing_public_key: signing,
    encryption_public_key: encryptionPublic,
    created_at,
  });
  const signature = toBase64url(ed25519Sign(loadSeed(session.vault, c.name), bytes));
  return session.relay.call<KeyRecord>({
    method: 'PUT',
    path: '/api/v1/agents/me/keys',
    body: { signing_public_key: signing, encryption_public_key: encryptionPublic, created_at, signature },
    // a key the relay publishes must be saved here: a stop waits for the answer
    whole: true,
  });
}

/** Rotates the X25519 key (same identity) and publishes it; the rotation is saved only once the relay took it. */
export async function generateKeys(session: AgentSession): Promise<KeyStatus> {
  const current = await session.relay.call<{ current: KeyRecord }>({ method: 'GET', path: '/api/v1/agents/me/keys' });
  const rotation = session.config.rotation + 1;
  const next = deriveIdentityKeys(loadSeed(session.vault, session.name), rotation);
  const enc = toBase64url(next.encPublic);
  await upload(session, enc, current.current);
  session.updateConfig({ ...session.config, rotation, encryption_public_key: enc });
  return keyStatus(session);
}

/**
 * What the relay publishes for this agent, judged against the vault: only a record of the
 * vault's keys that the vault's key signed (over this agent's own names, not the ones the
 * relay's answer carries) is taken as published.
 */
function judge(session: AgentSession, entry: KeyDirectoryEntry): KeyBackfill['state'] {
  const c = session.config;
  const cur = entry.current;
  if (cur.signing_public_key !== c.signing_public_key) return 'foreign';
  if (cur.encryption_public_key !== c.encryption_public_key) return 'stale';
  if (cur.signature === null) return 'unsigned';
  const ours = {
    ...entry,
    deployment_id: c.deployment_id,
    tenant_id: c.tenant_id,
    agent_id: c.agent_id,
    agent_number: c.agent_number,
  };
  return Peers.recordSignedBy(ours, cur, c.signing_public_key) ? 'signed' : 'bad_signature';
}

/**
 * svc keys backfill: has the relay publish a record of the vault's current keys, signed by
 * them, where it does not: an unsigned version 1 (an agent enrolled before key records were
 * signed, whose encryption key nothing bound to its signing key) or another encryption key
 * (a relay whose ledger went back in time). A record under another signing key, or with a
 * signature that does not verify, cannot be mended from here: it is reported, never
 * overwritten (the caller says so: own_key_mismatch).
 */
export async function backfillKeys(session: AgentSession, dryRun: boolean): Promise<KeyBackfill> {
  const entry = await session.relay.call<KeyDirectoryEntry>({ method: 'GET', path: '/api/v1/agents/me/keys' });
  const state = judge(session, entry);
  const answer = {
    agent: session.name,
    agent_number: session.config.agent_number,
    state,
    relay_version: entry.current.version,
    uploaded_version: null,
  };
  if (state === 'foreign' || state === 'bad_signature') {
    session.log.warn(
      { agent: session.name, state, version: entry.current.version },
      'keys: the relay publishes keys this vault did not sign',
    );
  }
  if (dryRun || (state !== 'unsigned' && state !== 'stale')) return answer;
  const record = await upload(session, session.config.encryption_public_key, entry.current);
  session.log.info({ agent: session.name, state, version: record.version }, 'keys: signed record published');
  return { ...answer, uploaded_version: record.version };
}

/** Publishes the vaulted keys, signed, when the relay's record does not carry them yet. */
export async function uploadSigning(session: AgentSession): Promise<KeyStatus> {
  const mismatch = ownKeyMismatch(await backfillKeys(session, false));
  if (mismatch) throw new DaemonError('own_key_mismatch', mismatch);
  return keyStatus(session);
}

/** Trusts the changed key of a peer, then archives the envelopes held for it. */
export async function acceptPeerKey(session: AgentSession, number: string): Promise<PeerKey> {
  const pin = session.archive.getPeer(number);
  if (!pin) throw new DaemonError('not_found', `No pinned key for ${number}.`);
  if (!pin.changed) return publicPeer(pin);
  // The owner checked this key's fingerprint: it is taken with the encryption key of a record
  // it signs, read from the directory now and checked again (what was recorded as changed
  // by an older daemon was not), and only if the directory still serves that key.
  const seen = pin.changed.signing_public_key;
  const { entry } = await session.peers.refresh(number);
  const cur = entry.current;
  if (cur.signing_public_key !== seen) {
    throw new DaemonError(
      'peer_key_changed',
      `The signing key of ${number} changed again since it was shown; check \`svc keys status\` again.`,
    );
  }
  const problem = Peers.newKeyProblem(entry, cur);
  if (problem) {
    throw new DaemonError(
      'peer_key_invalid',
      `The relay served the new key of ${number} with a record that cannot be trusted (${problem}); nothing was accepted. Ask the relay's operator to check it.`,
    );
  }
  const accepted = session.archive.acceptPeerChange(number, cur);
  session.log.info({ agent: session.name, peer: number }, 'peer key accepted');
  for (const held of session.archive.held(number)) {
    await session.inbound.process(
      { message_id: held.message_id, sender: number, envelope: JSON.parse(held.envelope) },
      { fromHeld: true },
    );
    session.archive.releaseHeld(held.message_id);
  }
  return publicPeer(accepted as PeerPin);
}
