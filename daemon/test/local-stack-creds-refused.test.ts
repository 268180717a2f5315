/**
 * An edge whose leaf creds the hub no longer takes (revoked by the relay, as a relay does
 * with an older relay's creds at start, or damaged) gets new ones by itself once its link
 * has not reached the hub for a while, instead of staying cut until its scheduled renewal
 * hours later. A REAL relay process with its hub; the edge's creds file is damaged and the
 * hub restarted, so that the leaf dials again with what the file holds.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, until } from '@svc/test-harness';
import type { TestDaemon } from '@svc/test-harness/daemon';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { type RelayProcess, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, expect, it } from 'vitest';

let stage: DaemonsOnRelay<'alice' | 'bob'>;
/** the relay running now (the test restarts it) */
let relay: RelayProcess;
let a: TestDaemon;
let b: TestDaemon;

const log = (d: TestDaemon) => readFileSync(join(d.home, 'logs', 'daemon.log'), 'utf8').split('\n');

beforeAll(async () => {
  stage = await startDaemonsOnRelay({
    agents: ['alice', 'bob'],
    relayEnv: { SVC_RELAY_LEAF_LISTEN: `127.0.0.1:${await freePort()}` },
    daemon: { outboxRetryMinMs: 100, outboxRetryMaxMs: 500, reconnectMaxMs: 1_000 },
  });
  ({ relay } = stage);
  ({ alice: a, bob: b } = stage.daemons);
  await b.client.register({
    enrollment_code: await stage.grant('uplink-b', ['--capability', 'nats-relay']),
    name: 'uplink-b',
  });
}, 90_000);

afterAll(async () => {
  await stage?.close();
  if (relay !== stage?.relay) await relay?.stop();
});

it('fetches new uplink creds when the hub refuses its creds, and receives through its source again', async () => {
  const status = await b.client.localStack('start', {
    local_only: false,
    as: 'uplink-b',
    port: await freePort(),
    monitor_port: await freePort(),
    listen: '127.0.0.1',
  });
  expect(status.sources).toEqual(['src_bob']);
  const viaSource = (id: string) => () =>
    log(b).some((l) => l.includes(id) && l.includes('"via":"source"') && l.includes('"durable":"src_bob"'));
  const first = await a.client.send('alice', { to: 'bob', content: 'through the leaf' });
  await until(viaSource(first.message_id), 30_000, 'the first message through the source');

  // the creds the edge holds are refused from now on: one character of the user JWT's signature changed
  const credsFile = join(b.home, 'run', 'local-stack', 'uplink.creds');
  const creds = readFileSync(credsFile, 'utf8');
  const jwt = /-----BEGIN NATS USER JWT-----\s+(\S+)\s+/.exec(creds)?.[1] as string;
  const at = jwt.length - 20; // a middle character of the signature: all six of its bits count
  const damaged = `${jwt.slice(0, at)}${jwt[at] === 'A' ? 'B' : 'A'}${jwt.slice(at + 1)}`;
  writeFileSync(credsFile, creds.replace(jwt, damaged), { mode: 0o600 });
  // the hub restarts: the leaf dials again with what the file holds, and is refused
  await relay.stop();
  relay = await spawnRelay({ dataDir: relay.dataDir, env: relay.env, port: relay.port, init: false });

  await until(
    () => log(b).some((l) => l.includes('fetching new uplink creds')),
    60_000,
    'the daemon fetching new creds',
  );
  await until(() => !readFileSync(credsFile, 'utf8').includes(damaged), 30_000, 'new creds in the file');
  const second = await a.client.send('alice', { to: 'bob', content: 'through the leaf, again' });
  await until(viaSource(second.message_id), 60_000, 'the second message through the source');
}, 150_000);
