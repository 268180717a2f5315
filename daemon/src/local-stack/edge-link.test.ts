/**
 * Pulling a named source (a real nats-server with JetStream domain `hub`): when handling
 * one pulled envelope fails, it and everything its batch still brought go back to the
 * hub in order, so the next pull hands them over again at once and in the same order
 * (not after the consumer's ack wait, behind newer messages); and what the hub hands a
 * pull that stopped comes to the next one (the consumer's ack wait is an hour here).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort, tempDir, until } from '@svc/test-harness';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgeLink } from './edge-link.js';

const TOKEN = 'test-token';
let url: string;
let stopServer: () => void;

beforeAll(async () => {
  const dir = tempDir('svc-edge-link-');
  const port = await freePort();
  const conf = join(dir, 'nats.conf');
  writeFileSync(
    conf,
    `host: "127.0.0.1"\nport: ${port}\njetstream { store_dir: ${JSON.stringify(join(dir, 'js'))}, domain: hub }\nauthorization: { token: "${TOKEN}" }\n`,
  );
  const child = spawn('/usr/sbin/nats-server', ['-c', conf], { stdio: 'ignore' });
  stopServer = () => child.kill('SIGTERM');
  url = `nats://127.0.0.1:${port}`;
  const nc = await until(() => connect({ servers: url, token: TOKEN }).catch(() => undefined), 10_000, 'nats-server');
  const jsm = await until(() => jetstreamManager(nc).catch(() => undefined), 10_000, 'JetStream');
  await jsm.streams.add({ name: 'SVC_MSGS', subjects: ['msg.*'] });
  // an ack wait far longer than the test: only a nak brings a message back in time
  await jsm.consumers.add('SVC_MSGS', {
    durable_name: 'src_bob',
    filter_subject: 'msg.bob',
    ack_policy: AckPolicy.Explicit,
    ack_wait: 3600 * 1e9,
  });
  for (const id of ['m1', 'm2', 'm3']) {
    nc.publish('msg.bob', JSON.stringify({ header: { message_id: id, sender: 'alice' } }));
  }
  await nc.flush();
  await nc.close();
}, 30_000);

afterAll(() => stopServer?.());

/** The pulls the hub holds for the durable, waiting for messages. */
async function waitingPulls(): Promise<number> {
  const nc = await connect({ servers: url, token: TOKEN });
  try {
    const jsm = await jetstreamManager(nc, { domain: 'hub' });
    return (await jsm.consumers.info('SVC_MSGS', 'src_bob')).num_waiting;
  } finally {
    await nc.close();
  }
}

async function publish(id: string): Promise<void> {
  const nc = await connect({ servers: url, token: TOKEN });
  nc.publish('msg.bob', JSON.stringify({ header: { message_id: id, sender: 'alice' } }));
  await nc.flush();
  await nc.close();
}

describe('a named source after a failed envelope', () => {
  it('hands the failed one and the rest of its batch over again, in order', async () => {
    const link = await EdgeLink.open(url, TOKEN, undefined, pino({ level: 'silent' }), { pullExpiresMs: 1000 });
    try {
      const feed = link.source('src_bob');
      const ready = async () => undefined;
      const first: string[] = [];
      await expect(
        (async () => {
          for await (const m of feed.pull(new AbortController().signal, ready)) {
            first.push(m.item.message_id);
            throw new Error('the relay did not answer');
          }
        })(),
      ).rejects.toThrow('the relay did not answer');
      expect(first).toEqual(['m1']);

      const again: string[] = [];
      const stop = new AbortController();
      const pulling = (async () => {
        for await (const m of feed.pull(stop.signal, ready)) {
          again.push(m.item.message_id);
          await m.ack();
        }
      })();
      await until(() => again.length >= 3, 10_000, 'the three messages again');
      stop.abort();
      await pulling;
      expect(again).toEqual(['m1', 'm2', 'm3']);
    } finally {
      await link.close();
    }
  }, 30_000);
});

describe('a named source whose pull stops while it waits on the hub', () => {
  it('gives back what the hub hands that pull afterwards: the next pull gets it, not after the ack wait', async () => {
    const link = await EdgeLink.open(url, TOKEN, undefined, pino({ level: 'silent' }), { pullExpiresMs: 3000 });
    try {
      const feed = link.source('src_bob');
      const ready = async () => undefined;
      // a session stops while its pull waits (nothing pending)
      const stop = new AbortController();
      const got: string[] = [];
      const first = (async () => {
        for await (const m of feed.pull(stop.signal, ready)) got.push(m.item.message_id);
      })();
      await until(async () => (await waitingPulls()) >= 1, 10_000, 'the pull waits on the hub');
      stop.abort();
      await first;
      expect(got).toEqual([]);
      // the hub still holds that pull, first in line, until it expires (across a leaf link
      // it cannot tell that nobody reads it): m4 goes to it, and must not stay there
      await publish('m4');
      // another session's pull (an archive reset, say) gets m4 once that pull has expired
      const next = new AbortController();
      const again: string[] = [];
      const second = (async () => {
        for await (const m of feed.pull(next.signal, ready)) {
          again.push(m.item.message_id);
          await m.ack();
        }
      })();
      await until(() => again.length >= 1, 15_000, 'm4 through the next pull');
      next.abort();
      await second;
      expect(again).toEqual(['m4']);
    } finally {
      await link.close();
    }
  }, 30_000);
});
