/**
 * Inbox events go to the tenant's other relay instances, not back to the one that sent
 * them: its tenant connection has no echo, so a busy instance does not read (and drop) one
 * message of its own per send. A real nats-server through the relay's Bus; another
 * connection of the tenant's account stands for another instance.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '@svc/test-harness';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Bus } from '../bus/index.js';
import { connectWithCreds } from '../bus/system-client.js';
import { BusInbox } from './bus-inbox.js';
import { INBOX_EVENTS_SUBJECT, type InboxEvent } from './inbox-events.js';

let dataDir: string;
let bus: Bus;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-inbox-echo-'));
  bus = await Bus.start({ dataDir, tenants: ['A'], logger: pino({ level: 'silent' }) });
}, 30_000);

afterAll(async () => {
  await bus?.close();
  await rm(dataDir, { recursive: true, force: true });
});

it('an instance does not receive its own inbox events; the others do, and it receives theirs', async () => {
  const inbox = new BusInbox(bus);
  const own: InboxEvent[] = [];
  const stop = new AbortController();
  inbox.listen('A', (e) => own.push(e), stop.signal);
  const { creds } = await bus.mintUserCreds('A', { name: 'another-instance' });
  const other = await connectWithCreds(bus.clientUrl, creds, 'another-instance');
  try {
    const seen: string[] = [];
    other.subscribe(INBOX_EVENTS_SUBJECT, {
      callback: (_err, msg) => {
        seen.push(msg.string());
      },
    });
    await other.flush();
    // the listener subscribes on the tenant connection in the background: wait until it hears the other
    await until(
      async () => {
        other.publish(INBOX_EVENTS_SUBJECT, JSON.stringify({ from: 'other', kind: 'acked', rows: ['warm-up'] }));
        await other.flush();
        return own.length > 0;
      },
      10_000,
      'the listener hears another instance',
    );

    await inbox.announce('A', { from: 'me', kind: 'recorded', rows: ['row-1'] });
    await until(() => seen.some((s) => s.includes('row-1')), 5_000, 'the other instance gets the event');
    // Published after the other got ours: had ours come back to us, it would have come first.
    other.publish(INBOX_EVENTS_SUBJECT, JSON.stringify({ from: 'other', kind: 'acked', rows: ['row-2'] }));
    await until(() => own.some((e) => e.rows.includes('row-2')), 5_000, "the other instance's event");
    // (a late warm-up event may be there too)
    expect(own.filter((e) => e.from === 'me')).toEqual([]);
  } finally {
    stop.abort();
    await other.close();
  }
});
