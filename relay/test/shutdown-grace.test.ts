/**
 * A stopping relay lets requests in progress finish for a grace period, then closes their
 * connections: a client that stalls an upload does not hold the stop for the whole request
 * timeout (5 minutes). A real relay (createRelay in this process, a real nats-server) and a
 * real client socket that sends half a body and then nothing.
 */
import { request } from 'node:http';
import { until } from '@svc/test-harness';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, expect, it } from 'vitest';

let relay: BusRelay | undefined;

afterAll(async () => {
  await relay?.close();
});

it('closes the connection of an upload still stalled when the grace period ends, and stops', async () => {
  relay = await inProcessBusRelay({}, { shutdownGraceMs: 300 });
  const [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
  const server = relay.relay.app.server;
  const connections = () => new Promise<number>((r) => server.getConnections((_err, n) => r(n)));
  // the enrollments' kept-alive connections go, so that the one left is the upload's
  server.closeIdleConnections();
  await until(async () => (await connections()) === 0, 10_000, 'no connection but the upload');
  const stalled = request(`${relay.url}/api/v1/blobs?for=${bob.number}`, {
    method: 'POST',
    headers: { ...alice.auth, 'content-type': 'application/octet-stream', 'content-length': '65536' },
  });
  const cut = new Promise<string>((resolve) => {
    stalled.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    stalled.on('response', (res) => resolve(`answered ${res.statusCode}`));
  });
  stalled.write(Buffer.alloc(32 * 1024, 1));
  await until(async () => (await connections()) === 1, 10_000, 'the relay holds the stalled upload');

  // without the grace period this waits for the request timeout (5 minutes): the test times out
  await relay.close();
  expect(await cut).toBe('ECONNRESET');
  expect(relay.logLines.some((l) => l.includes('requests still in progress at shutdown'))).toBe(true);
}, 30_000);
