/**
 * Two relay processes sharing one nats-server and one ledger: recipients acknowledging an
 * attachment at the same moment, half of them on each instance, are each counted, so the
 * last one purges it. Nothing in one instance's memory can order the writes; the bus does.
 */
import { randomBytes } from 'node:crypto';
import { call, enrollAgent, type TestAgent } from '@svc/test-harness/agent-client';
import { type NatsCluster, startNatsCluster } from '@svc/test-harness/nats-cluster';
import { grantCode, type RelayProcess, spawnRelayFleet } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let nats: NatsCluster;
let fleet: RelayProcess[] = [];
let alice: TestAgent;
let recipients: TestAgent[];

const agent = async (id: string, on: RelayProcess) =>
  enrollAgent(on.url, await grantCode(on, id, ['--tenant', 'acme']));

async function upload(url: string, from: TestAgent, to: TestAgent[]): Promise<string> {
  const res = await fetch(`${url}/api/v1/blobs?for=${to.map((r) => r.number).join(',')}`, {
    method: 'POST',
    headers: { ...from.auth, 'content-type': 'application/octet-stream' },
    body: randomBytes(1000),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { blob_id: string }).blob_id;
}

beforeAll(async () => {
  nats = await startNatsCluster({ size: 1 });
  fleet = await spawnRelayFleet({ natsEnv: nats.relayEnv(1), env: { SVC_RELAY_TENANTS: 'acme' } });
  alice = await agent('alice', fleet[0] as RelayProcess);
  recipients = [];
  for (const id of ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']) recipients.push(await agent(id, fleet[1] as RelayProcess));
}, 90_000);

afterAll(async () => {
  for (const relay of fleet) await relay.stop();
  await nats?.stop();
});

describe('blob acknowledgements across relay instances', () => {
  it('six recipients ack at once, alternately on A and B: every ack counts, the last purges it', async () => {
    const on = (i: number) => (fleet[i % fleet.length] as RelayProcess).url;
    for (let round = 0; round < 6; round++) {
      const id = await upload(on(0), alice, recipients);
      const acks = await Promise.all(
        recipients.map((r, i) =>
          call<{ purged: boolean }>(on(i), 'POST', `/api/v1/blobs/${id}/ack`, undefined, r.auth),
        ),
      );
      expect(
        acks.map((r) => r.status),
        `round ${round}`,
      ).toEqual(recipients.map(() => 200));
      expect(acks.filter((r) => r.body.purged).length, `round ${round}: acks saying purged`).toBe(1);
      for (const relay of fleet) {
        const got = await call(relay.url, 'GET', `/api/v1/blobs/${id}`, undefined, alice.auth);
        expect([got.status, got.body.error], `round ${round}`).toEqual([404, 'unknown_blob']);
      }
    }
  });
});
