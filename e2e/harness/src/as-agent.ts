/**
 * Acting as an agent outside its daemon: what reaches the wire when the agent's signing
 * key moves behind its daemon's back, or when a sender is forged. The daemon under test
 * must hold, refuse or report what these produce.
 */
import { join } from 'node:path';
import { FileVault, loadSeed } from '@svc/daemon';
import {
  createEnvelopeHeader,
  type EnvelopeHeader,
  fromBase64url,
  keyRecordBytes,
  toBase64url,
  utf8,
} from '@svc/shared';
import { deriveIdentityKeys, ed25519Generate, ed25519Sign, sealEnvelope } from '@svc/shared/node';
import type { TestDaemon } from './daemon.js';

export interface RelayAnswer<T> {
  status: number;
  body: T;
}

/** One call to the agent's relay as the agent: its access token from its daemon. */
export async function relayAs<T = unknown>(
  d: TestDaemon,
  agent: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<RelayAnswer<T>> {
  const [me, { access_token }] = await Promise.all([d.client.getAgent(agent), d.client.token(agent)]);
  const res = await fetch(`${me.api_url}/api/v1/${path}`, {
    method,
    headers: {
      authorization: `Bearer ${access_token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? undefined : JSON.parse(text)) as T };
}

/**
 * Moves the agent's identity to a fresh signing key in the relay's directory, signed by
 * the old key and the new one, while its daemon keeps the old: the key change a peer sees.
 * Returns the new signing key and its public half (base64url).
 */
export async function rotateSigningKeyBehindDaemon(
  d: TestDaemon,
  agent: string,
  passphrase = 'test passphrase',
): Promise<{ signPrivate: Uint8Array; signingPublicKey: string }> {
  const old = deriveIdentityKeys(loadSeed(FileVault.open(join(d.home, 'vault.json'), passphrase), agent), 0);
  const fresh = deriveIdentityKeys(ed25519Generate().privateKey, 0);
  const me = await d.client.getAgent(agent);
  const dir = await relayAs<{ current: { version: number } }>(d, agent, 'GET', 'agents/me/keys');
  const record = {
    deployment_id: me.deployment_id,
    tenant_id: me.tenant_id,
    agent_id: me.agent_id,
    agent_number: me.agent_number,
    version: dir.body.current.version + 1,
    signing_public_key: toBase64url(fresh.signPublic),
    encryption_public_key: toBase64url(fresh.encPublic),
    created_at: new Date().toISOString(),
  };
  const bytes = keyRecordBytes(record);
  const put = await relayAs(d, agent, 'PUT', 'agents/me/keys', {
    signing_public_key: record.signing_public_key,
    encryption_public_key: record.encryption_public_key,
    created_at: record.created_at,
    signature: toBase64url(ed25519Sign(fresh.signPrivate, bytes)),
    previous_signature: toBase64url(ed25519Sign(old.signPrivate, bytes)),
  });
  if (put.status !== 200 && put.status !== 201)
    throw new Error(`key rotation refused: ${put.status} ${JSON.stringify(put.body)}`);
  return { signPrivate: fresh.signPrivate, signingPublicKey: record.signing_public_key };
}

/**
 * Seals `text` from `from` to `to`'s current key, signed with `signWith` (the sender's key
 * or not), and posts it as is through the sender's relay session: what the wire carries
 * when a sender is forged or has moved to a new key.
 */
export async function postSealedAs(
  d: TestDaemon,
  from: string,
  to: string,
  text: string,
  signWith: Uint8Array,
): Promise<{ header: EnvelopeHeader; status: number }> {
  const me = await d.client.getAgent(from);
  const peer = await relayAs<{ current: { encryption_public_key: string } }>(d, from, 'GET', `agents/${to}/keys`);
  const header = createEnvelopeHeader({
    sender: me.agent_number,
    recipient: to,
    conversation_id: `dm:${[me.agent_number, to].sort().join(':')}`,
    conversation_type: 'direct',
    content_type: 'text',
    deployment_id: me.deployment_id,
    tenant_id: me.tenant_id,
  });
  const envelope = sealEnvelope({
    header,
    plaintext: utf8(text),
    recipientX25519Public: fromBase64url(peer.body.current.encryption_public_key),
    senderEd25519Private: signWith,
  });
  const posted = await relayAs(d, from, 'POST', 'messages', { envelopes: [envelope] });
  return { header, status: posted.status };
}
