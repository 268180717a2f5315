/**
 * An attachment read or acknowledged while the relay's nats-server does not answer is a
 * 503 bus_unavailable the client may retry, never a 500 (a REAL relay process; its
 * nats-server is stopped with SIGSTOP, then let go on).
 */
import { randomBytes } from 'node:crypto';
import { call, enrollAgent, type TestAgent } from '@svc/test-harness/agent-client';
import { grantCode, type RelayProcess, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: RelayProcess;
let natsPid: number;

beforeAll(async () => {
  relay = await spawnRelay();
  natsPid = relay.natsPid();
}, 60_000);

const enrolled = async (id: string): Promise<TestAgent> => enrollAgent(relay.url, await grantCode(relay, id));

afterAll(async () => {
  try {
    process.kill(natsPid, 'SIGCONT');
  } catch {
    // gone already
  }
  await relay?.stop();
});

describe('an attachment while the bus does not answer', () => {
  it('read and acknowledged: 503 bus_unavailable; both work again once it answers', async () => {
    const [alice, bob] = [await enrolled('alice'), await enrolled('bob')];
    const up = await fetch(`${relay.url}/api/v1/blobs?for=${bob.number}`, {
      method: 'POST',
      headers: { ...alice.auth, 'content-type': 'application/octet-stream' },
      body: randomBytes(1000),
    });
    expect(up.status).toBe(201);
    const { blob_id: id } = (await up.json()) as { blob_id: string };
    process.kill(natsPid, 'SIGSTOP');
    try {
      const got = await call(relay.url, 'GET', `/api/v1/blobs/${id}`, undefined, bob.auth);
      expect([got.status, got.body.error]).toEqual([503, 'bus_unavailable']);
      const acked = await call(relay.url, 'POST', `/api/v1/blobs/${id}/ack`, undefined, bob.auth);
      expect([acked.status, acked.body.error]).toEqual([503, 'bus_unavailable']);
    } finally {
      process.kill(natsPid, 'SIGCONT');
    }
    const again = await call<{ purged: boolean }>(relay.url, 'POST', `/api/v1/blobs/${id}/ack`, undefined, bob.auth);
    expect([again.status, again.body.purged]).toEqual([200, true]);
  }, 60_000);
});
