/**
 * `svc start` as a leaf of the hub, against a REAL relay process with its nats-server: the
 * daemon's nats-relay identity claims a named source for each local agent, fetches
 * relay-uplink/v1 creds, and the daemon's nats-server joins the hub as a leaf node: the
 * hub's JetStream answers through it for the local agent's source.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from '@svc/test-harness';
import type { TestDaemon } from '@svc/test-harness/daemon';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let stage: DaemonsOnRelay<'alice' | 'bob'>;
let a: TestDaemon;
let leafPort: number;

beforeAll(async () => {
  leafPort = await freePort();
  stage = await startDaemonsOnRelay({
    agents: ['alice', 'bob'],
    relayEnv: { SVC_RELAY_LEAF_LISTEN: `127.0.0.1:${leafPort}` },
  });
  a = stage.daemons.alice;
}, 60_000);

afterAll(() => stage?.close());

describe('svc start: the local nats-server as a leaf of the hub', () => {
  it('needs a local nats-relay identity', async () => {
    await expect(
      a.client.localStack('start', { local_only: false, port: 1, monitor_port: 2, listen: '127.0.0.1' }),
    ).rejects.toMatchObject({ code: 'uplink_identity_required' });
  });

  it("the relay's signed deployment document names its leaf URL (the daemon dials no other)", async () => {
    const jws = await (await fetch(`${stage.relay.url}/.well-known/svc-deployment`)).text();
    const doc = JSON.parse(Buffer.from(jws.trim().split('.')[1] as string, 'base64url').toString('utf8'));
    expect(doc.leaf_url).toBe(`nats-leaf://127.0.0.1:${leafPort}`);
  });

  it('claims a source per local agent and joins the hub as a leaf with the uplink creds', async () => {
    await a.client.register({
      enrollment_code: await stage.grant('uplink-a', ['--capability', 'nats-relay']),
      name: 'uplink-a',
    });
    const port = await freePort();
    const status = await a.client.localStack('start', {
      local_only: false,
      port,
      monitor_port: await freePort(),
      listen: '127.0.0.1',
    });
    expect(status).toMatchObject({
      running: true,
      local_only: false,
      sources: ['src_alice'],
      inbox_prefix: '_INBOX_uplink-a',
    });
    // the hub's JetStream answers through the local server, for the source of alice (and
    // nothing else: the creds name only it). Receiving through the source is
    // daemon/test/local-stack-edges.test.ts's.
    // the daemon's client token is in the server's config (0600, this home's only)
    const conf = readFileSync(join(a.home, 'run', 'local-stack', 'nats-server.conf'), 'utf8');
    const token = /token: "([^"]+)"/.exec(conf)?.[1];
    const nc = await connect({ servers: `nats://127.0.0.1:${port}`, inboxPrefix: status.inbox_prefix, token });
    try {
      const js = jetstream(nc, { domain: 'hub', timeout: 1000 });
      let filter: string | undefined;
      for (let attempt = 0; attempt < 50 && !filter; attempt++) {
        try {
          filter = (await (await js.consumers.get('SVC_MSGS', 'src_alice')).info()).config.filter_subject;
        } catch {
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      expect(filter).toBe('msg.alice');
      await expect(js.consumers.get('SVC_MSGS', 'src_bob').then((c) => c.info())).rejects.toThrow();
    } finally {
      await nc.close();
    }
    expect(await a.client.localStack('stop')).toEqual({ stopped: true });
    // the uplink identity runs no agent session: the relay would refuse it every agent route
    const log = readFileSync(join(a.home, 'logs', 'daemon.log'), 'utf8');
    expect(
      log.split('\n').filter((l) => l.includes('"agent":"uplink-a"') && l.includes('relay stream failed')),
    ).toEqual([]);
    expect((await a.client.status()).agents.find((s) => s.name === 'uplink-a')?.session).toBe('offline');
  }, 60_000);
});
