/**
 * A publish whose bus connection drops fails at once (the client retries elsewhere), not
 * at the acknowledgement timeout; one made while the client reconnects is sent again once
 * it has, and only then: a slow answer on a steady connection is not multiplied. A real
 * nats-server; a subscriber stands for the stream.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, nanos } from '@nats-io/transport-node';
import { tempDir } from '@svc/test-harness';
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
let port: number;

async function startServer(onPort?: number): Promise<ChildProcess> {
  port = onPort ?? (await findFreePort('127.0.0.1'));
  const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  servers.push(server);
  url = `nats://127.0.0.1:${port}`;
  return server;
}

const exitOf = (server: ChildProcess) => new Promise((resolve) => server.once('exit', resolve));

/** A stand-in for the stream: answers every copy as JetStream does, or none. */
function standInStream(nc: NatsConnection, answers: boolean): string[] {
  const copies: string[] = [];
  nc.subscribe('msg.>', {
    callback: (_err, msg) => {
      copies.push(msg.headers?.get('Nats-Msg-Id') ?? '');
      if (answers) msg.respond(JSON.stringify({ stream: 'SVC_MSGS', seq: 7 }));
    },
  });
  return copies;
}

/**
 * A door to the server that the test opens and shuts: a connection through it drops when it
 * shuts, and comes back only when the test opens it again, whatever the client's timing.
 */
function door(target: number) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const port = findFreePort('127.0.0.1');
  return {
    port,
    open: async () => {
      const p = await port;
      server = createServer((inbound) => {
        const outbound = createConnection(target, '127.0.0.1');
        for (const [a, b] of [
          [inbound, outbound],
          [outbound, inbound],
        ] as const) {
          sockets.add(a);
          a.on('error', () => undefined);
          a.on('close', () => b.destroy());
          a.pipe(b);
        }
      });
      await new Promise<void>((r) => server?.listen(p, '127.0.0.1', r));
    },
    shut: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        sockets.clear();
        if (server) server.close(() => r());
        else r();
      }),
  };
}

it('sends a publish made while reconnecting (which the NATS client discards) once it has reconnected', async () => {
  await startServer();
  await connectWhenUp(url); // the server is up
  // the publisher reaches the server through a door; the stream stand-in directly, so that it
  // listens before the publisher is back (the server's restart raced the stand-in's subscription)
  const entry = door(port);
  await entry.open();
  const nc = await connect({
    servers: `nats://127.0.0.1:${await entry.port}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    reconnectJitter: 0,
    ignoreClusterUpdates: true,
  });
  connections.push(nc);
  // the timeout is far beyond the test's own: only the resend can answer in time
  const publisher = new AckedPublisher(nc, 600_000);
  const disconnected = (async () => {
    for await (const s of nc.status()) if (s.type === 'disconnect') return;
  })();
  await entry.shut();
  await disconnected;
  const pending = publisher.publish('msg.1', new Uint8Array([1]), 'id-1', 'SVC_MSGS');
  const stream = await connectWhenUp(url);
  const copies = standInStream(stream, true);
  await stream.flush();
  await entry.open();
  await expect(pending).resolves.toEqual({ stream: 'SVC_MSGS', seq: 7 });
  expect(copies).toEqual(['id-1']);
  publisher.close();
  await entry.shut();
});

it('on a steady connection an unanswered publish is not sent again: it times out', async () => {
  await startServer();
  const [nc, stream] = await Promise.all([connectWhenUp(url), connectWhenUp(url)]);
  const copies = standInStream(stream, false);
  await stream.flush();
  const publisher = new AckedPublisher(nc, 600);
  await expect(publisher.publish('msg.1', new Uint8Array([1]), 'id-1', 'SVC_MSGS')).rejects.toThrow(
    /no JetStream acknowledgement within 600 ms/,
  );
  expect(copies).toEqual(['id-1']);
  publisher.close();
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
  const exited = exitOf(started);
  started.kill('SIGKILL');
  await exited;
  await rejected;
  publisher.close();
});

it('JetStream reads its headers: the message id deduplicates, the expected stream refuses another', async () => {
  const jsPort = await findFreePort('127.0.0.1');
  const store = tempDir('svc-acked-js-');
  servers.push(
    spawn('nats-server', ['-a', '127.0.0.1', '-p', String(jsPort), '-js', '-sd', store], { stdio: 'ignore' }),
  );
  const nc = await connectWhenUp(`nats://127.0.0.1:${jsPort}`);
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'SVC_MSGS', subjects: ['msg.>'], duplicate_window: nanos(60_000) });
  const publisher = new AckedPublisher(nc, 5000);
  const first = await publisher.publish('msg.1', new Uint8Array([1]), 'id-1', 'SVC_MSGS');
  expect(first).toMatchObject({ stream: 'SVC_MSGS', seq: 1 });
  expect(first.duplicate).toBeFalsy();
  expect(await publisher.publish('msg.1', new Uint8Array([2]), 'id-1', 'SVC_MSGS')).toMatchObject({
    seq: 1,
    duplicate: true,
  });
  expect(await publisher.publish('msg.1', new Uint8Array([3]), 'id-2', 'SVC_MSGS')).toMatchObject({ seq: 2 });
  await expect(publisher.publish('msg.1', new Uint8Array([4]), 'id-3', 'SVC_ACKS')).rejects.toThrow(
    /expected stream does not match/i,
  );
  expect(() => publisher.publish('msg.1', new Uint8Array([5]), 'id-4\r\nX: y', 'SVC_MSGS')).toThrow(/\\r or \\n/);
  expect((await jsm.streams.info('SVC_MSGS')).state.messages).toBe(2);
  publisher.close();
});
