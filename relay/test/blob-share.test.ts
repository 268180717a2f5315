/**
 * One agent's share of its tenant's attachment store (SVC_RELAY_AGENT_MAX_BLOB_BYTES):
 * an agent cannot fill the store for everyone else in its tenant. Its blobs count until
 * every recipient acknowledged them (the relay purges them) or they age out of the stream.
 * A real relay with its bus, on the run's test ledger.
 */
import { randomBytes } from 'node:crypto';
import { call, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { STREAM_MAX_AGE_MS } from '../src/bus/index.js';

let relay: BusRelay;
let alice: TestAgent;
let bob: TestAgent;
let carol: TestAgent;
const KB = 1024;

beforeAll(async () => {
  relay = await inProcessBusRelay({ SVC_RELAY_AGENT_MAX_BLOB_BYTES: String(250 * KB) });
  [alice, bob, carol] = await Promise.all([relay.enroll('alice'), relay.enroll('bob'), relay.enroll('carol')]);
}, 60_000);

afterAll(async () => {
  await relay?.close();
});

async function upload(
  from: TestAgent,
  to: TestAgent,
  size: number,
): Promise<{ status: number; body: { blob_id?: string; error?: string } }> {
  const res = await fetch(`${relay.url}/api/v1/blobs?for=${to.number}`, {
    method: 'POST',
    headers: { ...from.auth, 'content-type': 'application/octet-stream' },
    body: randomBytes(size),
  });
  return { status: res.status, body: (await res.json()) as { blob_id?: string; error?: string } };
}

it('blobs older than the stream keeps anything no longer count', async () => {
  const away = STREAM_MAX_AGE_MS + 60 * 60 * 1000;
  relay.advance(-away);
  expect((await upload(alice, carol, 200 * KB)).status).toBe(201);
  expect((await upload(alice, carol, 100 * KB)).status).toBe(507);
  relay.advance(away);
  // a month later: that blob has left the stream, and alice's share is whole again
  expect((await upload(alice, carol, 200 * KB)).status).toBe(201);
  expect((await upload(alice, carol, 100 * KB)).status).toBe(507);
  const id = (await upload(carol, alice, 10 * KB)).body.blob_id as string;
  expect((await call(relay.url, 'GET', `/api/v1/blobs/${id}`, undefined, alice.auth)).status).toBe(200);
});

it('refuses an upload past the agent share with 507 agent_blob_quota_full; others upload; an acknowledged blob frees its room', async () => {
  const dave = await relay.enroll('dave');
  const first = await upload(dave, bob, 100 * KB);
  expect(first.status).toBe(201);
  expect((await upload(dave, bob, 100 * KB)).status).toBe(201);
  const over = await upload(dave, bob, 100 * KB);
  expect(over.status).toBe(507);
  expect(over.body).toEqual({ error: 'agent_blob_quota_full', message: expect.any(String) });
  // a smaller one still fits
  expect((await upload(dave, bob, 40 * KB)).status).toBe(201);
  // another agent of the tenant is not affected
  expect((await upload(carol, bob, 200 * KB)).status).toBe(201);
  // bob fetches and acknowledges the first: it is purged and no longer counts
  const id = first.body.blob_id as string;
  expect((await call(relay.url, 'GET', `/api/v1/blobs/${id}`, undefined, bob.auth)).status).toBe(200);
  const ack = await call<{ purged: boolean }>(relay.url, 'POST', `/api/v1/blobs/${id}/ack`, undefined, bob.auth);
  expect(ack.body.purged).toBe(true);
  expect((await upload(dave, bob, 100 * KB)).status).toBe(201);
  expect((await upload(dave, bob, 100 * KB)).status).toBe(507);
});

it('uploads of one agent at once are admitted within its share, not each against the same use', async () => {
  const erin = await relay.enroll('erin');
  // four at once (its transfer slots), each 100 KiB of a 250 KiB share: two fit, whatever the ledger
  const answers = await Promise.all([0, 1, 2, 3].map(() => upload(erin, bob, 100 * KB)));
  expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 507, 507]);
});
