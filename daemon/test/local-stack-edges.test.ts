/**
 * Two machines' worth of daemons (two homes, two edges, each with its own nats-server as
 * a leaf of the hub) and a REAL relay process with its hub: an agent on edge B receives
 * through its named source across the leaf link, not the relay's HTTP stream; with the
 * relay and its hub down, agents of one edge keep messaging each other through their
 * local server, and what waits for another machine goes out, in order and once, when the
 * relay is back.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DaemonStatus } from '@svc/daemon/client';
import { freePort, until } from '@svc/test-harness';
import { startDaemon, type TestDaemon, trustRelay } from '@svc/test-harness/daemon';
import { grantCode, type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: RelayProcess;
let a: TestDaemon;
let b: TestDaemon;

const grant = (agentId: string, capability = 'http-relay') =>
  grantCode(relay, agentId, ['--tenant', 'acme', '--capability', capability]);

async function startEdge(d: TestDaemon, uplink: string) {
  return d.client.localStack('start', {
    local_only: false,
    as: uplink,
    port: await freePort(),
    monitor_port: await freePort(),
    listen: '127.0.0.1',
  });
}

const agentStatus = async (d: TestDaemon, name: string): Promise<DaemonStatus['agents'][number] | undefined> =>
  (await d.client.status()).agents.find((s) => s.name === name);

/** The relay's log lines of requests that opened the HTTP message stream. */
const streamOpens = (): number =>
  readFileSync(relay.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('incoming request') && l.includes('/api/v1/messages/stream')).length;

/** Until `d`'s log says it received `messageId` through the named source `durable`. */
const receivedThrough = (d: TestDaemon, messageId: string, durable: string) =>
  until(() =>
    readFileSync(join(d.home, 'logs', 'daemon.log'), 'utf8')
      .split('\n')
      .some((l) => l.includes(messageId) && l.includes('"via":"source"') && l.includes(`"durable":"${durable}"`)),
  );

beforeAll(async () => {
  const leafPort = await freePort();
  const timing = { outboxRetryMinMs: 100, outboxRetryMaxMs: 500 };
  [relay, a, b] = await Promise.all([
    spawnRelay({ env: { SVC_RELAY_TENANTS: 'acme', SVC_RELAY_LEAF_LISTEN: `127.0.0.1:${leafPort}` } }),
    startDaemon(undefined, timing),
    startDaemon(undefined, timing),
  ]);
  await trustRelay(relay, a, b);
  await a.client.register({ enrollment_code: await grant('alice'), name: 'alice' });
  await a.client.register({ enrollment_code: await grant('carol'), name: 'carol' });
  await b.client.register({ enrollment_code: await grant('bob'), name: 'bob' });
  await a.client.register({ enrollment_code: await grant('uplink-a', 'nats-relay'), name: 'uplink-a' });
  await b.client.register({ enrollment_code: await grant('uplink-b', 'nats-relay'), name: 'uplink-b' });
}, 90_000);

afterAll(async () => {
  await Promise.all([a?.daemon.close(), b?.daemon.close()]);
  await relay?.stop();
});

describe('two edges on leaf uplinks', () => {
  it('bob on edge B receives what alice on edge A sends through his named source, not the HTTP stream', async () => {
    expect(await startEdge(a, 'uplink-a')).toMatchObject({ sources: ['src_alice', 'src_carol'] });
    expect(await startEdge(b, 'uplink-b')).toMatchObject({ sources: ['src_bob'] });
    // svc start answers once the machine's sources reach the hub (docs/local-stack.md runs
    // `svc doctor` right after it)
    expect(await agentStatus(b, 'bob')).toMatchObject({ receive: 'source', source: 'src_bob', session: 'connected' });
    expect(await agentStatus(a, 'alice')).toMatchObject({ receive: 'source', session: 'connected' });
    const opensBefore = streamOpens();
    expect(opensBefore).toBeGreaterThan(0); // the agents used the stream before the uplink

    const sent = await a.client.send('alice', { to: 'bob', content: 'hello bob, across the leaf' });
    expect(sent.status).toBe('accepted');
    await until(async () => (await b.client.inbox('bob', { source: 'local' })).length === 1);
    expect((await b.client.inbox('bob', { source: 'local' })).map((m) => [m.message_id, m.content])).toEqual([
      [sent.message_id, 'hello bob, across the leaf'],
    ]);
    // the daemon says where it came from (logged once acknowledged on the hub); the relay
    // saw no stream opened meanwhile
    await receivedThrough(b, sent.message_id, 'src_bob');
    expect(streamOpens()).toBe(opensBefore);
    // bob's ack reached the relay: alice gets her receipt
    await until(async () => (await a.client.read('alice', 'bob')).some((m) => m.delivered_at !== null));
  }, 60_000);

  it('with the relay and its hub down, edge A delivers locally; the backlog for edge B drains in order, once', async () => {
    expect((await b.client.inbox('bob', { source: 'local' })).length).toBe(1);
    await relay.stop();

    // alice and carol, both on edge A, keep talking through their own server
    const local = await a.client.send('alice', { to: 'carol', content: 'the hub is down, carol' });
    expect(local.status).toBe('accepted');
    expect((await a.client.inbox('carol', { source: 'local' })).map((m) => [m.message_id, m.content])).toEqual([
      [local.message_id, 'the hub is down, carol'],
    ]);
    const back = await a.client.send('carol', { to: 'alice', content: 'still here, alice' });
    expect((await a.client.inbox('alice', { source: 'local' })).map((m) => m.message_id)).toEqual([back.message_id]);

    // what alice sends bob meanwhile waits in her outbox
    const queued: string[] = [];
    for (let i = 0; i < 3; i++) {
      const s = await a.client.send('alice', { to: 'bob', content: `backlog ${i}` });
      expect(s.status).toBe('queued');
      queued.push(s.message_id);
    }

    relay = await spawnRelay({ dataDir: relay.dataDir, env: relay.env, port: relay.port, init: false });
    await until(async () => (await b.client.inbox('bob', { source: 'local' })).length === 4, 30_000, 'the backlog');
    const inbox = await b.client.read('bob', 'alice');
    expect(inbox.filter((m) => m.content.startsWith('backlog')).map((m) => [m.message_id, m.content])).toEqual(
      queued.map((id, i) => [id, `backlog ${i}`]),
    );
    expect(await agentStatus(b, 'bob')).toMatchObject({ receive: 'source' });
  }, 90_000);

  it('an archive reset keeps the agent on its named source', async () => {
    const reset = await b.client.resetArchive('bob');
    expect(reset.agent).toBe('bob');
    await until(async () => (await agentStatus(b, 'bob'))?.session === 'connected', 30_000, 'bob connected again');
    expect(await agentStatus(b, 'bob')).toMatchObject({ receive: 'source', source: 'src_bob' });
    const opensBefore = streamOpens();
    // the stopped session's last pull still waits on the hub (until it expires, 5 s) and
    // gets this message first: it is given back to the new session's pull, not left for the
    // consumer's ack wait (30 s)
    const sent = await a.client.send('alice', { to: 'bob', content: 'after the reset' });
    await until(async () => (await b.client.inbox('bob', { source: 'local' })).length === 1, 20_000, 'bob receives');
    await receivedThrough(b, sent.message_id, 'src_bob');
    expect(streamOpens()).toBe(opensBefore);
  }, 60_000);

  it('an agent that leaves the machine gives its named source back (even when forgotten locally only)', async () => {
    // the relay's ledger, as its operator command reads it (readyz shows the rows to administrators only)
    const durables = async (): Promise<string[]> => {
      const r = await runRelayCli(['nats', 'reconcile-source-capacity', '--json'], relay.env);
      expect(r.code, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout) as { tenants: Array<{ tenant_id: string; ledger: { durables: string[] } }> };
      return [...(report.tenants.find((t) => t.tenant_id === 'acme')?.ledger.durables ?? [])].sort();
    };
    expect(await durables()).toEqual(['src_alice', 'src_bob', 'src_carol']);
    await a.client.deregister('carol', { revoke: false });
    expect(await durables()).toEqual(['src_alice', 'src_bob']);
    expect((await a.client.localStack('status')).sources).toEqual(['src_alice']);
  }, 30_000);

  it('an agent registered while the uplink runs gets its named source, and receives through it', async () => {
    await b.client.register({ enrollment_code: await grant('dan'), name: 'dan' });
    await until(async () => (await agentStatus(b, 'dan'))?.receive === 'source');
    expect((await b.client.localStack('status')).sources).toEqual(['src_bob', 'src_dan']);
    const sent = await a.client.send('alice', { to: 'dan', content: 'welcome, dan' });
    // the renewed creds cut the old leaf user: the link comes back with the new file
    await until(async () => (await b.client.inbox('dan', { source: 'local' })).length === 1, 30_000, 'dan receives');
    await receivedThrough(b, sent.message_id, 'src_dan');
  }, 60_000);

  it('an agent revoked while it receives through its named source shows refused, and asks the relay rarely', async () => {
    expect((await agentStatus(b, 'dan'))?.receive).toBe('source');
    const revoked = await runRelayCli(['agent', 'revoke', '--agent-id', 'dan', '--tenant', 'acme'], relay.env);
    expect(revoked.code, revoked.stderr).toBe(0);
    // the relay's cleanup gives the source back: the pull fails, the relay is asked, and the
    // session's sign-in is refused
    await until(async () => (await agentStatus(b, 'dan'))?.session === 'refused', 30_000, 'dan refused');
    const signIns = () =>
      readFileSync(relay.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('incoming request') && l.includes('"/api/v1/auth/sign-in"')).length;
    // the relay writes its log asynchronously: the sign-in that was refused may land in the
    // file a little after the status shows it, so the count is taken once it holds still
    let before = signIns();
    for (let still = 0; still < 10; ) {
      await new Promise((r) => setTimeout(r, 100));
      const now = signIns();
      still = now === before ? still + 1 : 0;
      before = now;
    }
    // at the reconnect pace (up to 5 s, ±25 %) there would be one or two more by now
    await new Promise((r) => setTimeout(r, 8_000));
    expect(signIns() - before).toBe(0);
    expect((await agentStatus(b, 'dan'))?.session).toBe('refused');
  }, 60_000);

  it('the daemon renews its uplink creds before they expire, on its own', async () => {
    // renew 300 ms after each issue (the relay's creds live a day)
    const c = await startDaemon(undefined, { uplinkRenewShare: 300 / (24 * 3600 * 1000) });
    try {
      await trustRelay(relay, c);
      await c.client.register({ enrollment_code: await grant('erin'), name: 'erin' });
      await c.client.register({ enrollment_code: await grant('uplink-c', 'nats-relay'), name: 'uplink-c' });
      const first = await startEdge(c, 'uplink-c');
      const credsFile = join(c.home, 'run', 'local-stack', 'uplink.creds');
      const firstCreds = readFileSync(credsFile, 'utf8');
      await until(() => readFileSync(credsFile, 'utf8') !== firstCreds, 10_000, 'renewed creds');
      await until(async () => (await c.client.localStack('status')).creds_expire_at !== first.creds_expire_at);
      expect(Date.parse((await c.client.localStack('status')).creds_expire_at as string)).toBeGreaterThan(
        Date.parse(first.creds_expire_at as string),
      );
      expect((await c.client.localStack('status')).sources).toEqual(['src_erin']);
    } finally {
      await c.daemon.close();
    }
  }, 60_000);
});
