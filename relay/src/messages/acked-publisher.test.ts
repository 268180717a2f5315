/**
 * A publish whose bus connection drops fails at once (the client retries elsewhere), not
 * at the acknowledgement timeout. A real nats-server; a subscriber that never answers
 * stands for a stream whose acknowledgement is lost with the connection.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, expect, it } from 'vitest';
import { findFreePort } from '../bus/index.js';
import { AckedPublisher } from './acked-publisher.js';

let server: ChildProcess | undefined;
const connections: NatsConnection[] = [];

afterAll(async () => {
  for (const nc of connections) await nc.close().catch(() => undefined);
  server?.kill('SIGKILL');
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

it('rejects the publishes waiting for an acknowledgement when the connection drops', async () => {
  const port = await findFreePort('127.0.0.1');
  server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `nats://127.0.0.1:${port}`;
  const [nc, silent] = await Promise.all([connectWhenUp(url), connectWhenUp(url)]);
  silent.subscribe('msg.>', { callback: () => undefined }); // receives, never acknowledges
  await silent.flush();
  // the timeout is far beyond the test's own: only the dropped connection can end the wait
  const publisher = new AckedPublisher(nc, 600_000);
  const pending = publisher.publish('msg.1', new Uint8Array([1]), 'id-1', 'SVC_MSGS');
  // handled from now on: it may reject while the server is still exiting
  const rejected = expect(pending).rejects.toThrow(/connection dropped/);
  await nc.flush();
  const exited = new Promise((resolve) => server?.once('exit', resolve));
  server.kill('SIGKILL');
  await exited;
  await rejected;
  publisher.close();
});
