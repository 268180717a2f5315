/**
 * A bus request whose answer is lost (the node carrying it died) is asked again before
 * the timeout, and a bus that does not answer is not flooded. A real nats-server with
 * JetStream; subscribers stand for the stream's direct get and lose requests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { tempDir, until } from '@svc/test-harness';
import { afterAll, expect, it } from 'vitest';
import { findFreePort } from '../bus/index.js';
import { BusInbox } from './bus-inbox.js';

let server: ChildProcess | undefined;
let nc: NatsConnection | undefined;

afterAll(async () => {
  await nc?.close();
  server?.kill('SIGKILL');
});

it('asks a direct get again when its answer is lost, and returns the answer to the second request', async () => {
  const port = await findFreePort('127.0.0.1');
  const store = await tempDir('svc-bus-inbox-');
  server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: 'ignore' });
  const conn = await until(
    () => connect({ servers: `nats://127.0.0.1:${port}` }).catch(() => undefined),
    10_000,
    'nats-server accepting connections',
  );
  nc = conn;
  const requests: string[] = [];
  const sub = conn.subscribe('$JS.API.DIRECT.GET.SVC_MSGS', {
    callback: (_err, msg) => {
      requests.push(msg.string());
      if (requests.length === 1) return; // the answer is lost
      const h = headers();
      h.set('Nats-Stream', 'SVC_MSGS');
      h.set('Nats-Sequence', '5');
      h.set('Nats-Subject', 'msg.1');
      h.set('Nats-Time-Stamp', new Date().toISOString());
      msg.respond('the envelope', { headers: h });
    },
  });
  await conn.flush();
  // a timeout of 1 s: a first attempt of half a second, then one more with the rest
  const inbox = new BusInbox({ tenantConnection: async () => conn }, 1000);
  const data = await inbox.get('acme', 5);
  expect(Buffer.from(data ?? []).toString()).toBe('the envelope');
  expect(requests.map((r) => JSON.parse(r))).toEqual([{ seq: 5 }, { seq: 5 }]);
  sub.unsubscribe();
});

it('asks a bus that does not answer twice at most (no storm of requests), then times out', async () => {
  const conn = nc as NatsConnection;
  const requests: string[] = [];
  conn.subscribe('$JS.API.DIRECT.GET.SVC_MSGS', { callback: (_err, msg) => void requests.push(msg.string()) });
  await conn.flush();
  const inbox = new BusInbox({ tenantConnection: async () => conn }, 1000);
  await expect(inbox.get('acme', 6)).rejects.toThrow(/timeout/);
  expect(requests).toHaveLength(2);
});
