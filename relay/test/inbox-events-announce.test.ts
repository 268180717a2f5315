/**
 * Inbox events are for the other relay instances sharing the ledger: a send tells them whose
 * inbox changed. A relay that runs its own nats-server holds its data dir alone, so with the
 * SQLite ledger in there it is the only instance, and a send announces nothing: no publish,
 * no socket write per request. On PostgreSQL (the relay suite runs on both ledgers) it
 * announces. Relays sharing a data dir on an external NATS: scale-out-process.test.ts.
 */
import { sealFor } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Bus } from '../src/bus/index.js';
import { connectWithCreds } from '../src/bus/system-client.js';
import { INBOX_EVENTS_SUBJECT } from '../src/messages/inbox-events.js';

let relay: BusRelay;

beforeAll(async () => {
  relay = await inProcessBusRelay();
}, 60_000);

afterAll(async () => {
  await relay?.close();
});

it('a send announces the inbox change unless the relay is the only instance on its ledger', async () => {
  const [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
  // the relay runs its own nats-server here: its bus is a Bus
  const bus = relay.relay.context.bus as Bus;
  const { creds } = await bus.mintUserCreds(alice.tenantId, { name: 'another-instance' });
  const other = await connectWithCreds(bus.clientUrl, creds, 'another-instance');
  try {
    const heard: string[] = [];
    other.subscribe(INBOX_EVENTS_SUBJECT, { callback: (_err, msg) => void heard.push(msg.string()) });
    await other.flush();
    const res = await fetch(`${relay.url}/api/v1/messages`, {
      method: 'POST',
      headers: { ...alice.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ envelopes: [sealFor(alice, bob, 'hello')] }),
    });
    expect(res.status).toBe(202);
    // The relay's connection's publishes reach the server before its answer to this flush,
    // and the server forwards them to `other` before it answers other's flush.
    await (await bus.tenantConnection(alice.tenantId)).flush();
    await other.flush();
    const { soleInstance, ledger } = relay.relay.context;
    expect(soleInstance).toBe(ledger.sql.dialect === 'sqlite');
    if (!soleInstance) {
      expect(heard.map((h) => JSON.parse(h) as { kind: string; rows: string[] })).toEqual([
        expect.objectContaining({ kind: 'recorded', rows: [expect.any(String)] }),
      ]);
    } else {
      expect(heard).toEqual([]);
    }
  } finally {
    await other.close();
  }
});
