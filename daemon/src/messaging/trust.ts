/**
 * What the daemon verified about each inbound message, for readers that must keep it
 * apart from the body (`svc mcp`, `svc tui`): the signing key the envelope verified under
 * (its fingerprint) and where that key stands now. `pinned`: signed by the key pinned for
 * the sender, and the relay serves no other. `changed`: the relay now serves a different
 * key that nobody accepted, or the message was signed by a key since replaced; either
 * way the sender's identity is in question. `held`: an envelope signed by the changed key,
 * kept unopened until the owner accepts it (`svc keys accept`).
 */
import type { Archive } from '../archive/archive.js';
import type { ArchivedMessage, HeldMessage, MessageVerification, TrustStatus } from '../client/api.js';
import { keyFingerprint } from '../client/fingerprint.js';
import { UNBOUND_VERSION } from '../session/peers.js';
import type { AgentSession } from '../session/session.js';

/** Records the key an archived inbound message verified under. */
export function recordSenderKey(archive: Archive, messageId: string, signingKey: string): void {
  archive.db.prepare('UPDATE messages SET sender_key = ? WHERE message_id = ?').run(signingKey, messageId);
}

function senderKeys(archive: Archive, ids: string[]): Map<string, string | null> {
  const out = new Map<string, string | null>();
  const stmt = archive.db.prepare('SELECT sender_key FROM messages WHERE message_id = ?');
  for (const id of ids) out.set(id, (stmt.get(id) as { sender_key: string | null } | undefined)?.sender_key ?? null);
  return out;
}

/** The verification of each inbound message (outbound ones are ours and carry none). */
export function withVerification(archive: Archive, messages: ArchivedMessage[]): ArchivedMessage[] {
  const inbound = messages.filter((m) => m.direction === 'inbound');
  if (inbound.length === 0) return messages;
  const keys = senderKeys(
    archive,
    inbound.map((m) => m.message_id),
  );
  return messages.map((m) => {
    if (m.direction !== 'inbound') return m;
    const pin = archive.getPeer(m.from);
    // archived before keys were recorded: it verified under the pin of that time, assumed the current one
    const key = keys.get(m.message_id) ?? pin?.signing_public_key ?? null;
    const verified: MessageVerification = {
      sender: m.from,
      key_fingerprint: key === null ? null : keyFingerprint(key),
      trust: pin && !pin.changed && key === pin.signing_public_key ? 'pinned' : 'changed',
      ...(pin?.changed ? { changed_key_fingerprint: keyFingerprint(pin.changed.signing_public_key) } : {}),
    };
    return { ...m, verified };
  });
}

export function heldMessages(archive: Archive): HeldMessage[] {
  const rows = archive.db
    .prepare('SELECT message_id, sender, held_at FROM held_envelopes ORDER BY held_at, message_id')
    .all() as Array<{ message_id: string; sender: string; held_at: string }>;
  return rows.map((r) => {
    const changed = archive.getPeer(r.sender)?.changed;
    return {
      message_id: r.message_id,
      from: r.sender,
      held_at: r.held_at,
      trust: 'held',
      key_fingerprint: changed ? keyFingerprint(changed.signing_public_key) : null,
    };
  });
}

export function trustStatus(session: AgentSession): TrustStatus {
  const c = session.config;
  const held = heldMessages(session.archive);
  return {
    agent: c.name,
    agent_number: c.agent_number,
    signing_key_fingerprint: keyFingerprint(c.signing_public_key),
    peers: session.archive.listPeers().map((p) => ({
      agent_number: p.agent_number,
      key_fingerprint: keyFingerprint(p.signing_public_key),
      pinned_at: p.pinned_at,
      trust: p.changed ? 'changed' : 'pinned',
      ...(p.changed
        ? { changed: { key_fingerprint: keyFingerprint(p.changed.signing_public_key), seen_at: p.changed.seen_at } }
        : {}),
      ...(p.key_version === UNBOUND_VERSION ? { unsigned: true as const } : {}),
      held: held.filter((h) => h.from === p.agent_number).length,
    })),
    held,
  };
}
