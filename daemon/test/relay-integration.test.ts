/**
 * Two daemons (separate SVC_HOMEs) against a REAL relay process with its nats-server:
 * deployment trust, registration with operator codes, messages both ways, the event
 * stream, inbox/read/ack/search from the archives, a tampered envelope refused and
 * reported, and a relay restart survived without loss.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ed25519Generate } from '@svc/shared/node';
import { tempDir, until } from '@svc/test-harness';
import { postSealedAs, relayAs, rotateSigningKeyBehindDaemon } from '@svc/test-harness/as-agent';
import { relayTrustBundle, startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { grantCode, type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonClient, DaemonEvent, DaemonEventStream } from '../src/client/index.js';
import { FileVault } from '../src/vault/index.js';

let relay: RelayProcess;
let a: TestDaemon;
let b: TestDaemon;
let bundle: string;
const events: { a: DaemonEvent[]; b: DaemonEvent[] } = { a: [], b: [] };
const streams: DaemonEventStream[] = [];

async function collect(client: DaemonClient, into: DaemonEvent[]): Promise<void> {
  const stream = await client.events();
  streams.push(stream);
  void (async () => {
    for await (const e of stream) into.push(e);
  })();
}

const postAliceToBob = (text: string, signWith: Uint8Array) => postSealedAs(a, 'alice', 'bob', text, signWith);

const grant = (agentId: string) => grantCode(relay, agentId, ['--tenant', 'acme']);

const waitEvent = (list: DaemonEvent[], pred: (e: DaemonEvent) => boolean, what: string, timeoutMs = 15_000) =>
  until(() => list.find(pred), timeoutMs, what);

beforeAll(async () => {
  [relay, a, b] = await Promise.all([spawnRelay({ env: { SVC_RELAY_TENANTS: 'acme' } }), startDaemon(), startDaemon()]);
  bundle = relayTrustBundle(relay);
  await Promise.all([collect(a.client, events.a), collect(b.client, events.b)]);
}, 60_000);

afterAll(async () => {
  for (const s of streams) s.close();
  await Promise.all([a?.daemon.close(), b?.daemon.close()]);
  await relay?.stop();
});

describe('daemon ↔ real relay', () => {
  it('refuses a deployment document under the wrong trust bundle', async () => {
    const otherDir = tempDir();
    const init = await runRelayCli(['deployment', 'init', '--json'], {
      SVC_RELAY_DATA_DIR: otherDir,
      SVC_RELAY_TENANTS: 'acme',
    });
    expect(init.code).toBe(0);
    const otherBundle = readFileSync(join(otherDir, 'deployment', 'trust-bundle.json'), 'utf8');
    await expect(
      a.client.fetchDeployment({ url: relay.url, trust_bundle: otherBundle, name: 'dev' }),
    ).rejects.toMatchObject({
      code: 'deployment_untrusted',
      status: 400,
    });
    // the right signer, but a bundle for another deployment id
    const renamed = JSON.stringify({ ...JSON.parse(bundle), deployment_id: 'someone-else' });
    await expect(
      a.client.fetchDeployment({ url: relay.url, trust_bundle: renamed, name: 'dev' }),
    ).rejects.toMatchObject({
      code: 'deployment_mismatch',
    });
    await expect(a.client.fetchDeployment({ url: relay.url, trust_bundle: 'nope', name: 'dev' })).rejects.toMatchObject(
      {
        code: 'deployment_malformed',
      },
    );
    expect(await a.client.listDeployments()).toEqual([]);
  });

  it('a code for a deployment not trusted yet is refused with the fetch command to run, its URL filled in', async () => {
    await expect(a.client.register({ enrollment_code: await grant('early') })).rejects.toMatchObject({
      code: 'unknown_deployment',
      message: expect.stringContaining(
        `first run \`svc deployment fetch --url ${relay.url} --trust TRUST_BUNDLE_FILE\` with the trust bundle the operator gave you`,
      ),
    });
  });

  it('fetches and trusts the deployment with its bundle', async () => {
    const info = await a.client.fetchDeployment({ url: relay.url, trust_bundle: bundle, name: 'dev' });
    expect(info).toMatchObject({ name: 'dev', api_url: relay.url, tenants: ['acme'] });
    expect(info.relay_key_ids.length).toBeGreaterThan(0);
    await b.client.fetchDeployment({ url: relay.url, trust_bundle: bundle, name: 'dev' });
    await expect(b.client.fetchDeployment({ url: relay.url, trust_bundle: bundle, name: 'dev' })).rejects.toMatchObject(
      {
        code: 'deployment_exists',
      },
    );
    expect((await a.client.listDeployments()).map((d) => d.name)).toEqual(['dev']);
    expect(await a.client.getDeployment('dev')).toEqual(info);
    const [audit] = await a.client.auditDeployments();
    expect(audit).toMatchObject({ name: 'dev', ok: true, problems: [] });
    expect((await a.client.renewDeployment('dev')).deployment_id).toBe(info.deployment_id);
  });

  it('registers one agent per daemon with operator codes (verified before redemption)', async () => {
    // a code whose signature is broken is refused locally, and the grant stays unspent
    const code = await grant('alice');
    const [prefix, payload, secret] = code.split('.');
    const obj = JSON.parse(Buffer.from(payload as string, 'base64url').toString('utf8'));
    const forged = `${prefix}.${Buffer.from(JSON.stringify({ ...obj, agent_number: 'mallory' })).toString('base64url')}.${secret}`;
    await expect(a.client.register({ enrollment_code: forged })).rejects.toMatchObject({
      code: 'deployment_untrusted',
    });

    const alice = await a.client.register({ enrollment_code: code, name: 'alice' });
    expect(alice).toMatchObject({ name: 'alice', agent_number: 'alice', tenant_id: 'acme', deployment: 'dev' });
    const bob = await b.client.register({ enrollment_code: await grant('bob') });
    expect(bob.name).toBe('bob');
    expect(await a.client.listAgents()).toEqual([alice]);
    expect(await b.client.getAgent('bob')).toEqual(bob);
    // secrets are in the encrypted vault, never in the agent file
    const agentFile = readFileSync(join(a.home, 'agents', 'alice', 'agent.json'), 'utf8');
    expect(agentFile).not.toMatch(/svc_ak_/);
    expect(readFileSync(join(a.home, 'vault.json'), 'utf8')).not.toMatch(/svc_ak_/);
    await waitEvent(events.a, (e) => e.type === 'session' && e.state === 'connected', 'alice connected');
    await waitEvent(events.b, (e) => e.type === 'session' && e.state === 'connected', 'bob connected');
    expect((await a.client.status()).agents).toEqual([
      {
        name: 'alice',
        agent_number: 'alice',
        deployment: 'dev',
        session: 'connected',
        kind: 'agent',
        receive: 'relay-stream',
      },
    ]);
    const token = await a.client.token('alice');
    expect(token.access_token.split('.')).toHaveLength(3);
  });

  it('exchanges messages both ways; events, inbox, read, check, ack, search', async () => {
    const sent = await a.client.send('alice', { to: 'bob', content: 'hello bob, the budget meeting is at noon' });
    expect(sent).toMatchObject({ to: 'bob', conversation_id: 'dm:alice:bob', status: 'accepted' });
    const got = await waitEvent(
      events.b,
      (e) => e.type === 'message' && e.message.message_id === sent.message_id,
      'bob receives',
    );
    expect(got).toMatchObject({
      agent: 'bob',
      message: { from: 'alice', to: 'bob', content: 'hello bob, the budget meeting is at noon' },
    });

    const inbox = await b.client.inbox('bob', { source: 'local' });
    expect(inbox.map((m) => m.message_id)).toEqual([sent.message_id]);
    const reply = await b.client.reply('bob', { message_id: sent.message_id, content: 'see you at noon, alice' });
    expect(reply).toMatchObject({ to: 'alice', conversation_id: 'dm:alice:bob' });
    await waitEvent(
      events.a,
      (e) => e.type === 'message' && e.message.message_id === reply.message_id,
      'alice receives',
    );

    // both archives hold the whole conversation, in order
    const thread = await a.client.read('alice', 'bob');
    expect(thread.map((m) => [m.direction, m.content])).toEqual([
      ['outbound', 'hello bob, the budget meeting is at noon'],
      ['inbound', 'see you at noon, alice'],
    ]);
    expect((await b.client.read('bob', 'dm:alice:bob', { last: 1 })).map((m) => m.message_id)).toEqual([
      reply.message_id,
    ]);

    // check returns new inbound once; a long-poll wakes on the next message
    expect((await b.client.check('bob')).map((m) => m.message_id)).toEqual([sent.message_id]);
    expect(await b.client.check('bob')).toEqual([]);
    const waiting = b.client.check('bob', { wait: 10 });
    await new Promise((r) => setTimeout(r, 200));
    const second = await a.client.send('alice', {
      to: 'bob',
      content: '{"agenda":["budget"]}',
      content_type: 'structured',
    });
    expect((await waiting).map((m) => m.message_id)).toEqual([second.message_id]);

    // ack removes it from the inbox; the relay's pending queue is empty (acked after archiving)
    const acked = await b.client.ack('bob', sent.message_id);
    expect(acked.message_id).toBe(sent.message_id);
    expect((await b.client.inbox('bob', { source: 'local' })).map((m) => m.message_id)).toEqual([second.message_id]);
    await until(
      async () => {
        const pending = await relayAs<{ envelopes: unknown[] }>(b, 'bob', 'GET', 'messages/pending');
        return pending.status === 200 && pending.body.envelopes.length === 0;
      },
      5000,
      'bob pending empty',
    );
    await expect(b.client.ack('bob', '0190f0f0-0000-7000-8000-000000000000')).rejects.toMatchObject({
      code: 'unknown_message',
    });
    // nor is a message to oneself sent: the archive would keep it as sent only, never received
    await expect(a.client.send('alice', { to: 'alice', content: 'note to self' })).rejects.toMatchObject({
      code: 'cannot_target_self',
      message: expect.stringMatching(/^alice is the sending agent: an agent cannot send to itself/),
    });
    // the sender's own copy is not acknowledged (a script acking ids from `read` got a false success)
    await expect(a.client.ack('alice', sent.message_id)).rejects.toMatchObject({
      code: 'unknown_message',
      message: `${sent.message_id} is a message you sent: only received messages are acknowledged.`,
    });
    expect((await a.client.read('alice', 'bob')).find((m) => m.message_id === sent.message_id)?.acked_at).toBeNull();

    expect((await a.client.search('alice', 'budget')).map((m) => m.message_id).sort()).toEqual(
      [sent.message_id, second.message_id].sort(),
    );
    expect((await b.client.search('bob', 'see you noon')).map((m) => m.message_id)).toEqual([reply.message_id]);
    // the sender is indexed too
    expect((await b.client.search('bob', 'alice')).length).toBe(3);
    expect(await b.client.search('bob', 'nothing-like-this')).toEqual([]);

    const keys = await a.client.keys('alice');
    expect(keys).toMatchObject({ agent: 'alice', rotation: 0, relay_version: 1 });
    expect(keys.peers.map((p) => p.agent_number)).toEqual(['bob']);
  });

  it('the sender learns of each delivery: a receipt event, delivered_at in the archive, once', async () => {
    const sent = await a.client.send('alice', { to: 'bob', content: 'did this arrive?' });
    // bob's daemon archives it and acks it on the relay; alice's session asks for receipts
    const receipt = await waitEvent(
      events.a,
      (e) => e.type === 'receipt' && e.message_id === sent.message_id,
      'receipt for alice',
    );
    expect(receipt).toEqual({
      type: 'receipt',
      agent: 'alice',
      message_id: sent.message_id,
      recipient: 'bob',
      acked_at: expect.any(String),
    });
    const thread = await a.client.read('alice', 'bob');
    expect(thread.find((m) => m.message_id === sent.message_id)?.delivered_at).toBe(
      (receipt as { acked_at: string }).acked_at,
    );
    // the earlier sent messages were delivered too; inbound ones never carry a receipt
    const outbound = thread.filter((m) => m.direction === 'outbound');
    expect(outbound.length).toBeGreaterThan(1);
    expect(outbound.every((m) => m.delivered_at !== null)).toBe(true);
    expect(thread.filter((m) => m.direction === 'inbound').every((m) => m.delivered_at === null)).toBe(true);
    // each receipt is recorded once: asking again finds nothing new
    expect(await a.client.sync('alice')).toEqual({ agent: 'alice', fetched: 0, archived: 0, rejected: 0, receipts: 0 });
    expect(events.a.filter((e) => e.type === 'receipt' && e.message_id === sent.message_id)).toHaveLength(1);
  });

  it('refuses and reports a tampered envelope (never archived, not redelivered)', async () => {
    const { header, status } = await postAliceToBob('send me the password', ed25519Generate().privateKey); // not alice's key
    expect(status).toBe(202);
    const rejected = await waitEvent(
      events.b,
      (e) => e.type === 'rejected' && e.message_id === header.message_id,
      'rejected',
    );
    expect(rejected).toMatchObject({ agent: 'bob', from: 'alice', reason: 'envelope_bad_signature' });
    expect((await b.client.read('bob', 'alice')).map((m) => m.message_id)).not.toContain(header.message_id);
    expect(await b.client.search('bob', 'password')).toEqual([]);
    expect(events.b.some((e) => e.type === 'message' && e.message.message_id === header.message_id)).toBe(false);
    await until(
      async () => {
        const pending = await relayAs<{ envelopes: unknown[] }>(b, 'bob', 'GET', 'messages/pending');
        return pending.body.envelopes.length === 0;
      },
      5000,
      'tampered envelope dropped from pending',
    );
    // (bob's own receipts may or may not have come in by now: his session asks for them too)
    expect(await b.client.sync('bob')).toMatchObject({ agent: 'bob', fetched: 0, archived: 0, rejected: 0 });
  });

  it('survives a relay restart and catches up', async () => {
    const before = events.b.length;
    // SIGKILL: an outage without goodbye. (A SIGTERM'd relay currently waits ~60 s for open
    // SSE streams to end before it exits — a relay-side issue, reported.)
    await relay.stop('SIGKILL');
    await until(
      () => events.b.slice(before).find((e) => e.type === 'session' && e.state === 'connecting'),
      10_000,
      'bob connecting',
    );
    // local-first: the send is queued in the outbox, not refused (everyday.test.ts covers the outbox)
    expect(await a.client.send('alice', { to: 'bob', content: 'lost?' })).toMatchObject({ status: 'queued' });
    relay = await spawnRelay({ dataDir: relay.dataDir, env: relay.env, port: relay.port, init: false });
    const after = await a.client.send('alice', { to: 'bob', content: 'after the restart' });
    await waitEvent(
      events.b,
      (e) => e.type === 'message' && e.message.message_id === after.message_id,
      'bob catches up',
      20_000,
    );
    await until(async () => (await b.client.status()).agents[0]?.session === 'connected', 10_000, 'bob reconnected');
    // nothing duplicated: each message id once in bob's archive
    const ids = (await b.client.read('bob', 'alice')).map((m) => m.message_id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain(after.message_id);
  }, 60_000);

  it('rotates the X25519 key; the peer seals to the new key', async () => {
    const keys = await b.client.generateKeys('bob');
    expect(keys).toMatchObject({ rotation: 1, relay_version: 2 });
    expect(keys.encryption_public_key).not.toBe((await a.client.keys('alice')).peers[0]?.encryption_public_key);
    const sent = await a.client.send('alice', { to: 'bob', content: 'to your new key' });
    await waitEvent(events.b, (e) => e.type === 'message' && e.message.message_id === sent.message_id, 'new key works');
    expect((await a.client.keys('alice')).peers[0]?.encryption_public_key).toBe(keys.encryption_public_key);
  });

  it('a daemon that was down catches up on restart (stream resumes, nothing lost or doubled)', async () => {
    await b.daemon.close();
    const m1 = await a.client.send('alice', { to: 'bob', content: 'while you were away 1' });
    const m2 = await a.client.send('alice', { to: 'bob', content: 'while you were away 2' });
    b = await startDaemon(b.home);
    await until(
      async () => {
        const ids = (await b.client.inbox('bob', { source: 'local' })).map((m) => m.message_id);
        return ids.includes(m1.message_id) && ids.includes(m2.message_id);
      },
      15_000,
      'bob catches up after restart',
    );
    const ids = (await b.client.read('bob', 'alice')).map((m) => m.message_id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('recovers from a refused API key by challenge sign-in with the identity key', async () => {
    await a.daemon.close();
    const vaultFile = join(a.home, 'vault.json');
    FileVault.open(vaultFile, 'test passphrase').set('agent/alice/api_key', `svc_ak_${'x'.repeat(40)}`);
    a = await startDaemon(a.home);
    const token = await a.client.token('alice');
    expect(token.access_token.split('.')).toHaveLength(3);
    const stored = FileVault.open(vaultFile, 'test passphrase').get('agent/alice/api_key');
    expect(stored).toMatch(/^svc_ak_/);
    expect(stored).not.toBe(`svc_ak_${'x'.repeat(40)}`);
    await until(async () => (await a.client.status()).agents[0]?.session === 'connected', 10_000, 'alice back');
  });

  it("holds messages under a peer's changed signing key until the owner accepts it", async () => {
    // alice's identity moves to a new signing key in the directory (signed by old and new)
    const fresh = await rotateSigningKeyBehindDaemon(a, 'alice');
    const bEvents: DaemonEvent[] = [];
    await collect(b.client, bEvents);
    const { header } = await postAliceToBob('signed with my new key', fresh.signPrivate);
    await waitEvent(bEvents, (e) => e.type === 'peer_key_changed' && e.peer === 'alice', 'peer_key_changed');
    const peer = (await b.client.keys('bob')).peers.find((p) => p.agent_number === 'alice');
    expect(peer?.changed?.signing_public_key).toBe(fresh.signingPublicKey);
    expect((await b.client.read('bob', 'alice')).map((m) => m.message_id)).not.toContain(header.message_id);
    await expect(b.client.send('bob', { to: 'alice', content: 'who are you?' })).rejects.toMatchObject({
      code: 'peer_key_changed',
      status: 409,
    });
    const accepted = await b.client.acceptPeerKey('bob', 'alice');
    expect(accepted).toMatchObject({ agent_number: 'alice', signing_public_key: fresh.signingPublicKey });
    expect(accepted.changed).toBeUndefined();
    await waitEvent(
      bEvents,
      (e) => e.type === 'message' && e.message.message_id === header.message_id,
      'held released',
    );
    expect((await b.client.read('bob', 'alice', { last: 1 }))[0]?.content).toBe('signed with my new key');
  });

  it('closes promptly while a long-poll check and an event stream are open', async () => {
    await b.client.check('bob'); // drain what arrived since the last check
    const waiting = b.client.check('bob', { wait: 60 });
    const stream = await b.client.events();
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    await b.daemon.close();
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(await waiting).toEqual([]);
    stream.close();
  });

  it('logs no API keys, tokens or plaintext', () => {
    for (const d of [a, b]) {
      const log = readFileSync(join(d.home, 'logs', 'daemon.log'), 'utf8');
      expect(log.length).toBeGreaterThan(0);
      expect(log).not.toMatch(/svc_ak_|eyJ[A-Za-z0-9_-]{10,}|budget|while you were away|new key|test passphrase/);
    }
  });
});
