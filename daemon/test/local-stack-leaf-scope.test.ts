/**
 * Local delivery never crosses the leaf link: REAL nats-servers, a hub that stands in for a
 * hostile relay's (no auth, it sees whatever the link gives it) and the local server from
 * the configuration the daemon writes. The hub must neither see nor answer a local delivery,
 * nor send one in; other subjects still cross (the link is up, so the test can fail).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeUser } from '@nats-io/jwt';
import { createAccount, createUser } from '@nats-io/nkeys';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { freePort, tempDir, until } from '@svc/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localServerConfig } from '../src/client/local-stack/server-config.js';
import { LOCAL_DELIVER_SUBJECT } from '../src/local-stack/edge-link.js';

const dir = tempDir('svc-leaf-scope-');
const servers: ChildProcess[] = [];
let hub: NatsConnection;
let local: NatsConnection;

function natsServer(name: string, config: string): void {
  const file = join(dir, `${name}.conf`);
  writeFileSync(file, config);
  servers.push(spawn('nats-server', ['-c', file], { stdio: 'ignore' }));
}

async function connected(port: number, token?: string): Promise<NatsConnection> {
  return until(
    () => connect({ servers: `nats://127.0.0.1:${port}`, ...(token ? { token } : {}) }).catch(() => undefined),
    10_000,
    `nats-server on ${port}`,
  );
}

/** A responder on `subject` of `on`, once a request from `from` reaches it across the leaf link. */
async function answeredAcross(on: NatsConnection, from: NatsConnection, subject: string, what: string): Promise<void> {
  on.subscribe(subject, { callback: (_e, m) => void m.respond('') });
  await on.flush();
  await until(
    () =>
      from.request(subject, '', { timeout: 200 }).then(
        () => true,
        () => false,
      ),
    15_000,
    what,
  );
}

beforeAll(async () => {
  const [hubPort, leafPort, localPort, monitorPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  natsServer('hub', `host: "127.0.0.1"\nport: ${hubPort}\nleafnodes: { host: "127.0.0.1", port: ${leafPort} }\n`);
  // creds as the relay issues them; this hub checks none
  const user = createUser();
  const jwt = await encodeUser('leaf', user, createAccount(), {});
  const credsFile = join(dir, 'leaf.creds');
  writeFileSync(
    credsFile,
    `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n` +
      `-----BEGIN USER NKEY SEED-----\n${new TextDecoder().decode(user.getSeed())}\n------END USER NKEY SEED------\n`,
  );
  const token = 'local-token';
  natsServer(
    'local',
    localServerConfig({
      listen: '127.0.0.1',
      port: localPort,
      monitorPort,
      clientToken: token,
      uplink: { leafUrl: `nats-leaf://127.0.0.1:${leafPort}`, credsFile },
    }),
  );
  hub = await connected(hubPort);
  local = await connected(localPort, token);
  // the link is up once a subject subscribed on the hub is reachable from the local side
  await answeredAcross(hub, local, 'probe.up', 'the leaf link');
}, 30_000);

afterAll(async () => {
  await Promise.allSettled([hub?.close(), local?.close()]);
  for (const s of servers) s.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe('the leaf link carries no local delivery', () => {
  it('the hub neither sees nor answers a local delivery; the local answer comes back', async () => {
    const seen: string[] = [];
    const hubListens = hub.subscribe(LOCAL_DELIVER_SUBJECT, {
      callback: (_e, m) => {
        seen.push(m.string());
        m.respond(JSON.stringify({ outcome: 'archived', received_at: 'forged by the hub' }));
      },
    });
    await hub.flush();
    local.subscribe(LOCAL_DELIVER_SUBJECT, {
      callback: (_e, m) =>
        void setTimeout(() => m.respond(JSON.stringify({ outcome: 'archived', received_at: 'local' })), 100),
    });
    await local.flush();
    // the hub's interest would have crossed the link by the time another hub subscription does
    await answeredAcross(hub, local, 'probe.later', 'a later hub subscription');
    for (let i = 0; i < 5; i++) {
      const answer = await local.request(LOCAL_DELIVER_SUBJECT, JSON.stringify({ message_id: `m${i}` }), {
        timeout: 3000,
      });
      expect(answer.json()).toEqual({ outcome: 'archived', received_at: 'local' });
    }
    expect(seen).toEqual([]);
    hubListens.unsubscribe();
  });

  it('the hub cannot send a delivery in', async () => {
    const got: string[] = [];
    local.subscribe(`${LOCAL_DELIVER_SUBJECT}`, { callback: (_e, m) => void got.push(m.string()) });
    await local.flush();
    // a subject the local side subscribes to does cross: the hub reaches it
    await answeredAcross(local, hub, 'probe.down', 'a local subscription seen from the hub');
    await expect(hub.request(LOCAL_DELIVER_SUBJECT, '{"message_id":"injected"}', { timeout: 500 })).rejects.toThrow();
    hub.publish(LOCAL_DELIVER_SUBJECT, '{"message_id":"published"}');
    await hub.flush();
    await local.request('probe.up', '', { timeout: 2000 }); // a round trip across the link
    expect(got).toEqual([]);
  });
});
