/**
 * A publish whose bus connection drops fails at once (the client retries elsewhere), not
 * at the acknowledgement timeout; one whose acknowledgement is lost on a live connection
 * is sent again. A real nats-server; subscribers stand for the stream: one never answers
 * (its acknowledgement is lost with the connection), one answers only the second copy.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, expect, it } from 'vitest';
import { findFreePort } from '../bus/index.js';
import { AckedPublisher } from './acked-publisher.js';

const servers: ChildProcess[] = [];
const connections: NatsConnection[] = [];

afterAll(async () => {
  for (const nc of connections) await nc.close().catch(() => undefined);
  for (const s of servers) s.kill('SIGKILL');
});

async function connectWhenUp(servers: string): Promise<NatsConnection> {
  for (let attempt = 0; ; attempt++) {
    try {
      const nc = await connect({ servers, reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
      connections.push(nc);
      return nc;
    } catch (err) {
      if (attempt > 100) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

let url: string;

async function startServer(): Promise<ChildProcess> {
  const port = await findFreePort('127.0.0.1');
  const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  servers.push(server);
  url = `nats://127.0.0.1:${port}`;
  return server;
}

it('sends an unanswered publish again, with the same message id, and resolves with the answer to the copy', async () => {
  const started = await startServer();
  const [nc, stream] = await Promise.all([connectWhenUp(url), connectWhenUp(url)]);
  const copies: string[] = [];
  stream.subscribe('msg.>', {
    callback: (_err, msg) => {
      copies.push(msg.headers?.get('Nats-Msg-Id') ?? '');
      // the first copy's acknowledgement is lost; the second is answered as JetStream does
      if (copies.length === 2) msg.respond(JSON.stringify({ stream: 'SVC_MSGS', seq: 7, duplicate: true }));
    },
  });
  await stream.flush();
  // the timeout is far beyond the test's own: only the resend can answer in time
  const publisher = new AckedPublisher(nc, 600_000, 100);
  await expect(publisher.publish('msg.1', new Uint8Array([1]), 'id-1', 'SVC_MSGS')).resolves.toEqual({
    stream: 'SVC_MSGS',
    seq: 7,
    duplicate: true,
  });
  expect(copies).toEqual(['id-1', 'id-1']);
  publisher.close();
  for (const c of [nc, stream]) await c.close();
  started.kill('SIGKILL');
});

it('rejects the publishes waiting for an acknowledgement when the connection drops', async () => {
  const started = await startServer();
  const [nc, silent] = await Promise.all([connectWhenUp(url), connectWhenUp(url)]);
  silent.subscribe('msg.>', { callback: () => undefined }); // receives, never acknowledges
  await silent.flush();
  // the timeout is far beyond the test's own: only the dropped connection can end the wait
  const publisher = new AckedPublisher(nc, 600_000);
  const pending = publisher.publish('msg.1', new Uint8Array([1]), 'id-1', 'SVC_MSGS');
  // handled from now on: it may reject while the server is still exiting
  const rejected = expect(pending).rejects.toThrow(/connection dropped/);
  await nc.flush();
  const exited = new Promise((resolve) => started.once('exit', resolve));
  started.kill('SIGKILL');
  await exited;
  await rejected;
  publisher.close();
});
