/**
 * What a hostile relay and a hostile sender can do to a daemon, against a REAL relay
 * process behind a proxy that stands in for the hostile relay (./fault-proxy.ts): it
 * forwards everything and answers key lookups with whatever a test sets. Each substitution of a peer's keys must
 * end in a refusal or the pinned key, never in an envelope sealed to another key; and a
 * sender never chooses the conversation its message lands in or a send goes to.
 */
import { join } from 'node:path';
import {
  createEnvelopeHeader,
  type Envelope,
  fromBase64url,
  type KeyDirectoryEntry,
  keyRecordBytes,
  newMessageId,
  toBase64url,
  utf8,
} from '@svc/shared';
import { deriveIdentityKeys, ed25519Generate, ed25519Sign, openEnvelope, sealEnvelope } from '@svc/shared/node';
import { until } from '@svc/test-harness';
import { call, enrollAgent, enrollmentBody, newIdentity, sealFor } from '@svc/test-harness/agent-client';
import { relayAs } from '@svc/test-harness/as-agent';
import type { TestDaemon } from '@svc/test-harness/daemon';
import type { DaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import type { RelayProcess } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonEvent } from '../src/client/index.js';
import { FileVault, loadSeed } from '../src/vault/index.js';
import { type FaultProxy, readArchive, startBehindFaultProxy, writeArchive } from './fault-proxy.js';

let proxy: FaultProxy;
let stage: DaemonsOnRelay<'alice' | 'bob'>;
let relay: RelayProcess;
let a: TestDaemon;
let b: TestDaemon;
let bobEvents: DaemonEvent[];
let deploymentId: string;
/** carol: enrolled with the test client only, her directory entry is what gets substituted */
let carol: { token: string; entry: KeyDirectoryEntry };

/** bob's directory entry as the real relay has it (past the proxy). */
async function realEntry(ref: string): Promise<KeyDirectoryEntry> {
  const res = await call<KeyDirectoryEntry>(relay.url, 'GET', `/api/v1/agents/${ref}/keys`, undefined, {
    authorization: `Bearer ${carol.token}`,
  });
  return res.body;
}

// opened once (scrypt): a rotation changes the rotation index, never the seed
let bobSeedOnce: Uint8Array | undefined;
const bobSeed = () => {
  bobSeedOnce ??= loadSeed(FileVault.open(join(b.home, 'vault.json'), 'test passphrase'), 'bob');
  return bobSeedOnce;
};

/** alice sends to bob through her daemon; returns the envelope the relay got, if any. */
async function aliceSends(text: string): Promise<Envelope> {
  const before = proxy.posted.length;
  const sent = await a.client.send('alice', { to: 'bob', content: text });
  expect(sent.to).toBe('bob');
  expect(proxy.posted.length).toBe(before + 1);
  return proxy.posted.at(-1) as Envelope;
}

/** Opens `env` with bob's key of `rotation`; throws when it was sealed to any other key. */
function openAsBob(env: Envelope, rotation: number): string {
  const plain = openEnvelope(env, deriveIdentityKeys(bobSeed(), rotation).encPrivate, {
    expectedRecipient: 'bob',
    expectedDeploymentId: deploymentId,
    expectedTenantId: 'acme',
  });
  return new TextDecoder().decode(plain);
}

/**
 * A new identity for bob, as a re-enrollment on another machine makes: its keys, and its
 * version 1 record signed by itself over bob's statement (in `real`, bob's entry; any
 * other entry gives that agent a fresh identity the same way).
 */
function newBobIdentity(real: KeyDirectoryEntry) {
  const keys = deriveIdentityKeys(ed25519Generate().privateKey, 0);
  const record = {
    version: 1,
    signing_public_key: toBase64url(keys.signPublic),
    encryption_public_key: toBase64url(keys.encPublic),
    created_at: new Date().toISOString(),
  };
  const signature = toBase64url(ed25519Sign(keys.signPrivate, keyRecordBytes({ ...real, ...record })));
  return { keys, record, current: { ...record, signature, previous_signature: null } };
}

/** Every way of asking for bob's keys gets `answer`. */
function serveForBob(answer: unknown): void {
  proxy.keys.set('bob', answer);
}

beforeAll(async () => {
  ({ stage, proxy } = await startBehindFaultProxy({
    agents: ['alice', 'bob'],
  }));
  relay = stage.relay;
  ({ alice: a, bob: b } = stage.daemons);
  bobEvents = stage.events.bob;
  deploymentId = (await a.client.getAgent('alice')).deployment_id;
  const enrolled = await call<{ access_token: string }>(
    relay.url,
    'POST',
    '/api/v1/enrollment',
    enrollmentBody(await stage.grant('carol'), newIdentity()),
  );
  expect(enrolled.status).toBe(201);
  const token = enrolled.body.access_token;
  const entry = await call<KeyDirectoryEntry>(relay.url, 'GET', '/api/v1/agents/me/keys', undefined, {
    authorization: `Bearer ${token}`,
  });
  carol = { token, entry: entry.body };
}, 90_000);

afterAll(() => stage?.close());

describe('a hostile relay cannot substitute or redirect a peer key', () => {
  const evil = deriveIdentityKeys(ed25519Generate().privateKey, 0);
  const evilEncryption = toBase64url(evil.encPublic);

  it('first contact pins bob from his self-signed version 1', async () => {
    const entry = await realEntry('bob');
    expect(entry.current).toMatchObject({ version: 1, signature: expect.any(String) });
    expect(openAsBob(await aliceSends('hello bob'), 0)).toBe('hello bob');
  });

  it('an unsigned version 1 with another encryption key does not replace the pin', async () => {
    const real = await realEntry('bob');
    serveForBob({ ...real, current: { ...real.current, encryption_public_key: evilEncryption, signature: null } });
    expect(openAsBob(await aliceSends('after an unsigned v1'), 0)).toBe('after an unsigned v1');
  });

  it('a higher version not signed by the pinned key (unsigned or signed by another key) does not replace it', async () => {
    const real = await realEntry('bob');
    const forged = ed25519Generate();
    const v2 = {
      ...real.current,
      version: 2,
      encryption_public_key: evilEncryption,
      created_at: new Date().toISOString(),
    };
    serveForBob({ ...real, current: { ...v2, signature: null } });
    expect(openAsBob(await aliceSends('after an unsigned v2'), 0)).toBe('after an unsigned v2');
    // a signature over bob's statement by a key that is not bob's
    const statement = keyRecordBytes({ ...real, ...v2 });
    serveForBob({ ...real, current: { ...v2, signature: toBase64url(ed25519Sign(forged.privateKey, statement)) } });
    expect(openAsBob(await aliceSends('after a foreign-signed v2'), 0)).toBe('after a foreign-signed v2');
    // a genuine signature, but carol's over her own statement, relabelled as bob's version 2
    serveForBob({
      ...real,
      current: { ...carol.entry.current, version: 2, signing_public_key: real.current.signing_public_key },
    });
    expect(openAsBob(await aliceSends('after a relabelled record'), 0)).toBe('after a relabelled record');
  });

  it("answering with another agent's entry is refused, by number or by id, and nothing is sent", async () => {
    const before = proxy.posted.length;
    serveForBob(carol.entry);
    await expect(a.client.send('alice', { to: 'bob', content: 'for bob only' })).rejects.toMatchObject({
      code: 'peer_directory_mismatch',
      status: 502,
    });
    // carol's entry under bob's agent id but another number: still not bob
    serveForBob({ ...carol.entry, agent_id: 'bob' });
    await expect(a.client.send('alice', { to: 'bob', content: 'for bob only' })).rejects.toMatchObject({
      code: 'peer_directory_mismatch',
    });
    // an agent never contacted: the answer must still name it
    proxy.keys.set('dave', carol.entry);
    await expect(a.client.send('alice', { to: 'dave', content: 'for dave only' })).rejects.toMatchObject({
      code: 'peer_directory_mismatch',
    });
    expect(proxy.posted.length).toBe(before);
    // asked by an agent id: carol (pinned, id carol) relabelled with the id asked for
    proxy.keys.delete('dave');
    await a.client.send('alice', { to: 'carol', content: 'hello carol' });
    const pinnedCarol = proxy.posted.length;
    proxy.keys.set('robert', { ...carol.entry, agent_id: 'robert' });
    await expect(a.client.send('alice', { to: 'robert', content: 'for robert only' })).rejects.toMatchObject({
      code: 'peer_directory_mismatch',
    });
    expect(proxy.posted.length).toBe(pinnedCarol);
    proxy.keys.delete('robert');
  });

  it('asked for by id, a pinned agent cannot be moved to another number with keys of the relay', async () => {
    const enrolled = await call<{ access_token: string }>(
      relay.url,
      'POST',
      '/api/v1/enrollment',
      enrollmentBody(await stage.grant('erin-id', ['--agent-number', 'erin-1005']), newIdentity()),
    );
    expect(enrolled.status).toBe(201);
    await a.client.send('alice', { to: 'erin-1005', content: 'hello erin' }); // pins erin by number
    const pinned = proxy.posted.length;
    const real = await realEntry('erin-1005');
    const moved = { ...real, agent_number: 'erin-6666' };
    const { current } = newBobIdentity(moved); // keys of the relay's, self-signed as erin-6666
    proxy.keys.set('erin-id', { ...moved, current, history: [current] });
    await expect(a.client.send('alice', { to: 'erin-id', content: 'for erin only' })).rejects.toMatchObject({
      code: 'peer_directory_mismatch',
    });
    expect(proxy.posted.length).toBe(pinned);
    proxy.keys.delete('erin-id');
  });

  it('an entry of another deployment or tenant is refused', async () => {
    const real = await realEntry('bob');
    for (const other of [{ deployment_id: 'elsewhere' }, { tenant_id: 'globex' }]) {
      serveForBob({ ...real, ...other });
      await expect(a.client.send('alice', { to: 'bob', content: 'x' })).rejects.toMatchObject({
        code: 'peer_directory_mismatch',
      });
    }
  });

  it('a real rotation is taken, and serving the older version afterwards does not roll it back', async () => {
    proxy.keys.clear();
    const v1 = (await realEntry('bob')).current;
    await b.client.generateKeys('bob');
    const rotated = await aliceSends('to your new key');
    expect(openAsBob(rotated, 1)).toBe('to your new key');
    expect(() => openAsBob(rotated, 0)).toThrow();
    const real = await realEntry('bob');
    expect(real.current.version).toBe(2);
    serveForBob({ ...real, current: v1, history: [v1] });
    const after = await aliceSends('still your new key');
    expect(openAsBob(after, 1)).toBe('still your new key');
    expect(() => openAsBob(after, 0)).toThrow();
  });

  it('a self-signed record with a small-order encryption key is never pinned or sealed to', async () => {
    // first contact with dave: a record that verifies under its own key, but whose X25519 key
    // is a small-order point (all zero): sealing to it would give the relay the shared secret
    const before = proxy.posted.length;
    const dave = ed25519Generate();
    const record = {
      version: 1,
      signing_public_key: toBase64url(dave.publicKey),
      encryption_public_key: toBase64url(new Uint8Array(32)),
      created_at: new Date().toISOString(),
    };
    const owner = { deployment_id: deploymentId, tenant_id: 'acme', agent_id: 'dave', agent_number: 'dave' };
    const signature = toBase64url(ed25519Sign(dave.privateKey, keyRecordBytes({ ...owner, ...record })));
    const current = { ...record, signature, previous_signature: null };
    proxy.keys.set('dave', { ...owner, current, history: [current] });
    await expect(a.client.send('alice', { to: 'dave', content: 'for dave only' })).rejects.toMatchObject({
      code: 'peer_key_invalid',
    });
    expect(proxy.posted.length).toBe(before);
    proxy.keys.delete('dave');
  });

  it("a changed signing key whose record it does not sign (carol's keys relabelled as bob's) is refused, never sealed to or offered", async () => {
    const real = await realEntry('bob');
    const before = proxy.posted.length;
    serveForBob({ ...real, current: { ...carol.entry.current, version: 3 } });
    await expect(a.client.send('alice', { to: 'bob', content: 'x' })).rejects.toMatchObject({
      code: 'peer_key_invalid',
    });
    expect(proxy.posted.length).toBe(before);
    expect((await a.client.keys('alice')).peers.find((p) => p.agent_number === 'bob')?.changed).toBeUndefined();
    proxy.keys.clear();
  });

  it('a changed key the directory stops serving is forgotten; a malformed signature is refused, not a fault', async () => {
    const real = await realEntry('bob');
    const { current } = newBobIdentity(real);
    serveForBob({ ...real, current, history: [current] });
    await expect(a.client.send('alice', { to: 'bob', content: 'x' })).rejects.toMatchObject({
      code: 'peer_key_changed',
    });
    // the relay serves bob's pinned key again: nothing is left to accept, sends go to bob
    serveForBob(real);
    expect(openAsBob(await aliceSends('you again'), 1)).toBe('you again');
    expect((await a.client.keys('alice')).peers.find((p) => p.agent_number === 'bob')?.changed).toBeUndefined();
    // a signature that is not even base64url
    const bad = { ...current, signature: '!' };
    serveForBob({ ...real, current: bad, history: [bad] });
    await expect(a.client.send('alice', { to: 'bob', content: 'x' })).rejects.toMatchObject({
      code: 'peer_key_invalid',
    });
    proxy.keys.clear();
  });

  it('a new signing key is accepted only with the encryption key its own record signs', async () => {
    // bob enrolls again on a new machine: a new identity, its version 1 signed by itself
    const real = await realEntry('bob');
    const { keys: bob2, record, current: genuine } = newBobIdentity(real);
    const entryWith = (current: object) => ({ ...real, current, history: [current] });
    const paired = { ...record, encryption_public_key: evilEncryption, previous_signature: null };
    const bobHas = async () => (await a.client.keys('alice')).peers.find((p) => p.agent_number === 'bob');
    const before = proxy.posted.length;

    // the relay pairs bob's new signing key with its own encryption key: unsigned, or under
    // the signature of the genuine record
    for (const forged of [
      { ...paired, signature: null },
      { ...paired, signature: genuine.signature },
    ]) {
      serveForBob(entryWith(forged));
      await expect(a.client.send('alice', { to: 'bob', content: 'x' })).rejects.toMatchObject({
        code: 'peer_key_invalid',
      });
      expect((await bobHas())?.changed).toBeUndefined();
    }
    // the genuine record: offered for acceptance, nothing sent until then
    serveForBob(entryWith(genuine));
    await expect(a.client.send('alice', { to: 'bob', content: 'x' })).rejects.toMatchObject({
      code: 'peer_key_changed',
    });
    expect((await bobHas())?.changed?.signing_public_key).toBe(record.signing_public_key);
    // when the owner accepts, the relay swaps the encryption key again: refused, still pending
    serveForBob(entryWith({ ...paired, signature: null }));
    await expect(a.client.acceptPeerKey('alice', 'bob')).rejects.toMatchObject({ code: 'peer_key_invalid' });
    expect((await bobHas())?.changed?.signing_public_key).toBe(record.signing_public_key);
    // or serves yet another key than the one the owner checked: refused
    serveForBob(entryWith(newBobIdentity(real).current));
    await expect(a.client.acceptPeerKey('alice', 'bob')).rejects.toMatchObject({ code: 'peer_key_changed' });
    expect(proxy.posted.length).toBe(before);
    // the genuine record again: a new check shows bob2's key, and accepting it seals to bob2's own key
    serveForBob(entryWith(genuine));
    await expect(a.client.send('alice', { to: 'bob', content: 'x' })).rejects.toMatchObject({
      code: 'peer_key_changed',
    });
    const accepted = await a.client.acceptPeerKey('alice', 'bob');
    expect(accepted).toMatchObject({ signing_public_key: record.signing_public_key });
    const sent = await aliceSends('to your new machine');
    const expected = { expectedRecipient: 'bob', expectedDeploymentId: deploymentId, expectedTenantId: 'acme' };
    expect(new TextDecoder().decode(openEnvelope(sent, bob2.encPrivate, expected))).toBe('to your new machine');
    expect(() => openEnvelope(sent, evil.encPrivate, expected)).toThrow();
    proxy.keys.clear();
  });
});

describe('a hostile relay cannot relabel an agent at enrollment', () => {
  it('an answer naming another agent, tenant, deployment or capabilities than the code is refused, nothing saved', async () => {
    const relabels = [
      { agent_number: 'alice' },
      { agent_id: 'alice' },
      { tenant_id: 'local' },
      { deployment_id: 'local' },
      { capabilities: ['http-relay', 'nats-relay'] },
    ];
    // the codes minted at once: each is an `svc-relay grant` process, seconds apiece on a busy machine
    const names = [...relabels.map((_, i) => `erin${i}`), 'erin-null', 'erin'];
    const codes = await Promise.all(names.map((n) => stage.grant(n)));
    for (const [i, relabel] of relabels.entries()) {
      proxy.rewriteEnrollment = (answer) => ({ ...answer, ...relabel });
      const name = `erin${i}`;
      await expect(a.client.register({ enrollment_code: codes[i] as string, name })).rejects.toMatchObject({
        code: 'enrollment_answer_mismatch',
        status: 502,
      });
      expect((await a.client.status()).agents.map((x) => x.name)).not.toContain(name);
    }
    // an answer that is no object at all: the same refusal, not a fault
    proxy.rewriteEnrollment = () => null as unknown as Record<string, unknown>;
    await expect(
      a.client.register({ enrollment_code: codes[relabels.length] as string, name: 'erin-null' }),
    ).rejects.toMatchObject({ code: 'enrollment_answer_mismatch' });
    expect((await a.client.status()).agents.map((x) => x.name)).not.toContain('erin-null');
    // the same relay, answering as it should: registered under the code's labels
    proxy.rewriteEnrollment = undefined;
    const agent = await a.client.register({ enrollment_code: codes[relabels.length + 1] as string, name: 'erin' });
    expect(agent).toMatchObject({ name: 'erin', agent_number: 'erin', tenant_id: 'acme' });
  }, 60_000);
});

describe('a sender cannot choose the conversation', () => {
  let aliceSeed: Uint8Array | undefined;

  /** alice seals to bob with a conversation id of her choosing and posts it as is. */
  async function aliceForges(text: string, conversationId: string, type: 'direct' | 'group' = 'direct') {
    const bobKey = (await realEntry('bob')).current.encryption_public_key;
    const header = createEnvelopeHeader({
      sender: 'alice',
      recipient: 'bob',
      conversation_id: conversationId,
      conversation_type: type,
      content_type: 'text',
      deployment_id: deploymentId,
      tenant_id: 'acme',
    });
    // the vault opened once: its key derivation (scrypt) is seconds apiece on a busy machine
    aliceSeed ??= loadSeed(FileVault.open(join(a.home, 'vault.json'), 'test passphrase'), 'alice');
    const envelope = sealEnvelope({
      header,
      plaintext: utf8(text),
      recipientX25519Public: fromBase64url(bobKey),
      senderEd25519Private: deriveIdentityKeys(aliceSeed, 0).signPrivate,
    });
    const posted = await relayAs(a, 'alice', 'POST', 'messages', { envelopes: [envelope] });
    expect(posted.status).toBeLessThan(300);
    return header;
  }

  it("refuses an inbound message filed under another conversation's id (never archived)", async () => {
    // bob and carol have a conversation; alice tries to write into it, or into a made-up one
    for (const [id, type] of [
      ['dm:bob:carol', 'direct'],
      ['dm:alice:carol', 'direct'],
      ['dm:bob:carol', 'group'],
    ] as const) {
      const header = await aliceForges(`in ${id} as ${type}`, id, type);
      await until(
        () =>
          bobEvents.find(
            (e) => e.type === 'rejected' && e.message_id === header.message_id && e.reason === 'conversation_mismatch',
          ),
        15_000,
        `rejection of ${id}`,
      );
    }
    expect(await b.client.read('bob', 'dm:bob:carol').catch(() => [])).toEqual([]);
    // the canonical id is taken
    const ok = await aliceForges('in our own conversation', 'dm:alice:bob');
    await until(
      () => bobEvents.find((e) => e.type === 'message' && e.message.message_id === ok.message_id),
      15_000,
      'the canonical one',
    );
  }, 60_000);

  it('a send by conversation id goes only to the other party of that id', async () => {
    // bob is not in it: refused, whatever the archive holds
    await expect(
      b.client.send('bob', { to: '', conversation_id: 'dm:alice:carol', content: 'x' }),
    ).rejects.toMatchObject({
      code: 'conversation_mismatch',
      status: 400,
    });
    // a recipient outside the named conversation
    await expect(
      b.client.send('bob', { to: 'alice', conversation_id: 'dm:bob:carol', content: 'x' }),
    ).rejects.toMatchObject({ code: 'conversation_mismatch' });
    // shaped like a group's id but not one: said so (not "not a direct conversation of bob")
    await expect(b.client.send('bob', { to: '', conversation_id: 'grp:nope:xx', content: 'x' })).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringMatching(/^grp:nope:xx is not a group or broadcast id: those are grp:CREATOR:ID/),
    });
    // the id alone names alice
    const sent = await b.client.send('bob', { to: '', conversation_id: 'dm:alice:bob', content: 'by id' });
    expect(sent).toMatchObject({ to: 'alice', conversation_id: 'dm:alice:bob' });
  });
});

describe('an unsigned key record (an agent enrolled before key records were signed)', () => {
  it("verifies the peer's messages, but nothing is sealed to its key until the peer publishes a signed record", async () => {
    const dora = await enrollAgent(relay.url, await stage.grant('dora-legacy'));
    const real = (await call<KeyDirectoryEntry>(relay.url, 'GET', '/api/v1/agents/me/keys', undefined, dora.auth)).body;
    // the relay pairs dora's real signing key (the fingerprint her owner reads out) with an
    // encryption key of its own, in an unsigned version 1: nothing binds the two
    const evilEncryption = toBase64url(deriveIdentityKeys(ed25519Generate().privateKey, 0).encPublic);
    const unsigned = { ...real.current, encryption_public_key: evilEncryption, signature: null };
    proxy.keys.set(dora.number, { ...real, current: unsigned, history: [unsigned] });
    try {
      // her message verifies under the signing key and is archived (the pin is taken from it)
      const aliceKey = fromBase64url((await realEntry('alice')).current.encryption_public_key);
      const hello = sealFor(dora, { number: 'alice', keys: { encPublic: aliceKey } }, 'hello from dora');
      expect((await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [hello] }, dora.auth)).status).toBe(202);
      await until(
        async () =>
          (await a.client.inbox('alice', { source: 'local' })).some((m) => m.message_id === hello.header.message_id),
        15_000,
        "dora's message",
      );
      // a reply would be sealed to the relay's key: refused, nothing posted
      const before = proxy.posted.length;
      await expect(a.client.send('alice', { to: dora.number, content: 'for dora only' })).rejects.toMatchObject({
        code: 'peer_key_unsigned',
        status: 409,
        message: expect.stringContaining('svc keys backfill'),
      });
      expect(proxy.posted.length).toBe(before);
      const peer = async () => (await a.client.keys('alice')).peers.find((p) => p.agent_number === dora.number);
      expect(await peer()).toMatchObject({ unsigned: true });
      // what MCP's key_status and the dashboard read
      const trusted = (await a.client.trust('alice')).peers.find((p) => p.agent_number === dora.number);
      expect(trusted).toMatchObject({ trust: 'pinned', unsigned: true });
      // an earlier daemon pinned such a record as version 1: refused all the same (no record
      // signed by her key carries the pinned keys)
      writeArchive(a, 'alice', (db) =>
        db.prepare('UPDATE peer_keys SET key_version = 1 WHERE agent_number = ?').run(dora.number),
      );
      expect(await peer()).not.toHaveProperty('unsigned'); // nothing told it yet
      await expect(a.client.send('alice', { to: dora.number, content: 'for dora only' })).rejects.toMatchObject({
        code: 'peer_key_unsigned',
      });
      expect(proxy.posted.length).toBe(before);
      // the refused send recorded what the pin is: keys status says so from now on
      expect(await peer()).toMatchObject({ unsigned: true });
    } finally {
      proxy.keys.delete(dora.number);
    }
    // a record her key signs (here her real version 1; after a backfill, version 2) replaces
    // the unbound pin, the earlier daemon's version 1 as this daemon's version 0
    const sealedToDora = async (text: string) => {
      const sent = await a.client.send('alice', { to: dora.number, content: text });
      const env = proxy.posted.at(-1) as Envelope;
      expect(env.header.message_id).toBe(sent.message_id);
      const plain = openEnvelope(env, dora.keys.encPrivate, {
        expectedRecipient: dora.number,
        expectedDeploymentId: deploymentId,
        expectedTenantId: 'acme',
      });
      expect(new TextDecoder().decode(plain)).toBe(text);
      const pinned = (await a.client.keys('alice')).peers.find((p) => p.agent_number === dora.number);
      expect(pinned).toMatchObject({ encryption_public_key: real.current.encryption_public_key });
      expect(pinned?.unsigned).toBeUndefined();
    };
    await sealedToDora('sealed to dora');
    writeArchive(a, 'alice', (db) =>
      db
        .prepare('UPDATE peer_keys SET encryption_public_key = ?, key_version = 0 WHERE agent_number = ?')
        .run(evilEncryption, dora.number),
    );
    await sealedToDora('sealed to dora again');
  }, 60_000);
});

describe('a sender the relay will not look up', () => {
  it('is refused alone (sender_lookup_refused): what comes after it, from another sender, still arrives', async () => {
    const dana = await enrollAgent(relay.url, await stage.grant('dana-lookup'));
    const bobKey = fromBase64url((await realEntry('bob')).current.encryption_public_key);
    // the answer a relay gave for a long agent number (its router's 414), or any refusal of the lookup
    proxy.keyErrors.set(dana.number, 414);
    try {
      const first = sealFor(dana, { number: 'bob', keys: { encPublic: bobKey } }, 'from dana');
      const posted = await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [first] }, dana.auth);
      expect(posted.status).toBe(202);
      await until(
        () =>
          bobEvents.find(
            (e) =>
              e.type === 'rejected' && e.message_id === first.header.message_id && e.reason === 'sender_lookup_refused',
          ),
        15_000,
        "the refusal of dana's envelope",
      );
      // another sender's envelope after it (a relay client of its own: alice's view of bob's
      // key is changed by the tests above)
      const fay = await enrollAgent(relay.url, await stage.grant('fay-lookup'));
      const after = sealFor(fay, { number: 'bob', keys: { encPublic: bobKey } }, 'after dana');
      expect((await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [after] }, fay.auth)).status).toBe(202);
      await until(
        () => bobEvents.find((e) => e.type === 'message' && e.message.message_id === after.header.message_id),
        15_000,
        "fay's message after it",
      );
      expect((await b.client.read('bob', 'dm:bob:dana-lookup').catch(() => [])).length).toBe(0);
    } finally {
      proxy.keyErrors.delete(dana.number);
    }
  });
});

// last in the file: the forged receipts leave alice's receipt cursor far ahead
describe('a hostile relay cannot fill the disk through what the daemon notes', () => {
  it('a junk stream event is refused, and what is noted of it is cut short', async () => {
    const huge = `junk-${'x'.repeat(100_000)}`; // within the daemon's limit of a stream event
    const seen = bobEvents.length;
    proxy.inject({ message_id: huge, sender: huge, envelope: { not: 'an envelope' } });
    const rejected = await until(
      () => bobEvents.slice(seen).find((e) => e.type === 'rejected'),
      15_000,
      'the rejection',
    );
    expect(rejected).toMatchObject({ reason: 'envelope_malformed', message_id: expect.stringMatching(/^junk-x+…$/) });
    if (rejected.type === 'rejected') expect(rejected.message_id.length).toBeLessThanOrEqual(128);
    const row = readArchive(
      b,
      'bob',
      (db) =>
        db
          .prepare(
            'SELECT length(message_id) AS id, length(sender) AS sender FROM rejected_envelopes ORDER BY rowid DESC',
          )
          .get() as { id: number; sender: number },
    );
    expect(row).toEqual({ id: 128, sender: 128 });
  });

  it('endless forged receipts: each sync ends, and what is kept of them is bounded', async () => {
    proxy.receipts = (since) => ({
      receipts: Array.from({ length: 100 }, (_, i) => ({
        id: since + i + 1,
        message_id: newMessageId(),
        recipient: 'bob',
        acked_at: new Date().toISOString(),
      })),
      next: since + 100,
    });
    try {
      const before = proxy.receiptReads;
      // each sync reads 50 pages of 100 at most, and returns (it used to read for as long as
      // the relay answered "more"); the background poll reads too meanwhile
      for (let i = 0; i < 5; i++) await a.client.sync('alice');
      expect(proxy.receiptReads - before).toBeGreaterThanOrEqual(250);
    } finally {
      proxy.receipts = undefined;
    }
    const stray = readArchive(
      a,
      'alice',
      (db) =>
        db
          .prepare(
            'SELECT count(*) AS n FROM receipts r WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_id = r.message_id)',
          )
          .get() as { n: number },
    );
    // 10,000 kept, and one poll's pages recorded after the last prune at most (25,000 forged)
    expect(stray.n).toBeLessThanOrEqual(15_000);
    expect(stray.n).toBeGreaterThan(0);
    // 25,000 forged receipts in 250 pages: ~13 s in a CI run, past 30 s once on a busier machine
  }, 120_000);
});
