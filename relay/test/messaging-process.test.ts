/**
 * End-to-end encrypted messaging through a real relay process and its nats-server:
 * both directions, pending (long-poll), the event stream, ack and receipts, isolation,
 * blocking, bad input, and durability across restarts.
 */
import { readFileSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { createUser } from '@nats-io/nkeys';
import type { NatsConnection } from '@nats-io/transport-node';
import { newMessageId } from '@svc/shared';
import { processAlive, until } from '@svc/test-harness';
import { call, enrollAgent, openFor, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { credsFile, userJwt } from '../src/bus/jwts.js';
import { readSeedFile } from '../src/bus/keys.js';
import { busRoot, natsLayout, tenantFiles } from '../src/bus/layout.js';
import { connectWithCreds } from '../src/bus/system-client.js';

let relay: RelayProcess;
let alice: TestAgent;
let bob: TestAgent;
let carol: TestAgent; // another tenant
let dave: TestAgent; // carol's tenant

async function agent(id: string, tenant = 'acme'): Promise<TestAgent> {
  const g = await runRelayCli(['grant', '--agent-id', id, '--tenant', tenant, '--json'], relay.env);
  if (g.code !== 0) throw new Error(g.stderr);
  return enrollAgent(relay.url, JSON.parse(g.stdout).enrollment_code);
}

interface Pending {
  envelopes: Array<{ cursor: number; message_id: string; sender: string; envelope: ReturnType<typeof sealFor> }>;
  more: boolean;
}
const send = (from: TestAgent, envelopes: unknown[]) =>
  call<{ results: Array<{ message_id: string; recipient: string; status: string }> }>(
    relay.url,
    'POST',
    '/api/v1/messages',
    { envelopes },
    from.auth,
  );
const pending = (who: TestAgent, query = '') =>
  call<Pending>(relay.url, 'GET', `/api/v1/messages/pending${query}`, undefined, who.auth);
const ack = (who: TestAgent, id: string) => call(relay.url, 'POST', `/api/v1/messages/${id}/ack`, undefined, who.auth);

async function drain(who: TestAgent) {
  for (const e of (await pending(who, '?limit=100')).body.envelopes) await ack(who, e.message_id);
}

beforeAll(async () => {
  relay = await spawnRelay({ env: { SVC_RELAY_TENANTS: 'acme,globex' } });
  [alice, bob, carol, dave] = await Promise.all([
    agent('alice'),
    agent('bob'),
    agent('carol', 'globex'),
    agent('dave', 'globex'),
  ]);
}, 60_000);

afterAll(async () => {
  await relay?.stop();
});

describe('exchange', () => {
  it('alice → bob and bob → alice: sealed, routed, opened and verified', async () => {
    const toBob = sealFor(alice, bob, 'hello bob ✓');
    expect((await send(alice, [toBob])).body.results).toEqual([
      { message_id: toBob.header.message_id, recipient: 'bob', status: 'accepted' },
    ]);
    const inbox = await pending(bob);
    expect(inbox.status).toBe(200);
    expect(inbox.body.envelopes).toHaveLength(1);
    const got = inbox.body.envelopes[0]!;
    expect(got).toMatchObject({ message_id: toBob.header.message_id, sender: 'alice' });
    expect(openFor(bob, got.envelope, alice.keys.signPublic)).toBe('hello bob ✓');

    const toAlice = sealFor(bob, alice, 'hi alice');
    expect((await send(bob, [toAlice])).status).toBe(202);
    const back = await pending(alice);
    expect(openFor(alice, back.body.envelopes[0]!.envelope, bob.keys.signPublic)).toBe('hi alice');
    await drain(alice);
    await drain(bob);
  });

  it('the message id is an idempotency key: a retried send is not delivered twice', async () => {
    const e = sealFor(alice, bob, 'once');
    expect((await send(alice, [e])).body.results[0]!.status).toBe('accepted');
    expect((await send(alice, [e])).body.results[0]!.status).toBe('duplicate');
    expect((await send(alice, [e, e])).body.results.map((r) => r.status)).toEqual(['duplicate', 'duplicate']);
    expect((await pending(bob)).body.envelopes.map((x) => x.message_id)).toEqual([e.header.message_id]);
    await ack(bob, e.header.message_id);
    // still a duplicate after acknowledgement: never delivered again
    expect((await send(alice, [e])).body.results[0]!.status).toBe('duplicate');
    expect((await pending(bob)).body.envelopes).toHaveLength(0);
    // a request mixing a new envelope with a duplicate delivers the new one, intact
    const fresh = sealFor(alice, bob, 'new beside a duplicate');
    expect((await send(alice, [e, fresh])).body.results.map((r) => r.status)).toEqual(['duplicate', 'accepted']);
    const got = (await pending(bob)).body.envelopes;
    expect(got.map((g) => openFor(bob, g.envelope, alice.keys.signPublic))).toEqual(['new beside a duplicate']);
    await drain(bob);
  });

  it('a body in any JSON spelling is taken like the canonical one (the fast path and the general path agree)', async () => {
    const canonical = sealFor(alice, bob, 'canonical body');
    const spelled = sealFor(alice, bob, 'spaced body, other key order');
    const reordered = (e: typeof spelled) => ({
      signature: e.signature,
      header: Object.fromEntries(Object.entries(e.header).reverse()),
      enc: e.enc,
      ciphertext: e.ciphertext,
    });
    const other = (envelopes: Array<typeof spelled>) =>
      call<{ results: Array<{ status: string }> }>(
        relay.url,
        'POST',
        '/api/v1/messages',
        JSON.stringify({ envelopes: envelopes.map(reordered) }, null, 2),
        alice.auth,
      );
    expect((await send(alice, [canonical])).body.results[0]?.status).toBe('accepted');
    expect((await other([spelled])).body.results[0]?.status).toBe('accepted');
    // the idempotency key holds across spellings, both ways
    expect((await other([canonical])).body.results[0]?.status).toBe('duplicate');
    expect((await send(alice, [spelled])).body.results[0]?.status).toBe('duplicate');
    const got = (await pending(bob)).body.envelopes;
    expect(got.map((g) => g.message_id)).toEqual([canonical.header.message_id, spelled.header.message_id]);
    expect(got.map((g) => openFor(bob, g.envelope, alice.keys.signPublic))).toEqual([
      'canonical body',
      'spaced body, other key order',
    ]);
    await drain(bob);
  });

  it('ack removes from pending and gives the sender a receipt; acking twice is harmless', async () => {
    const before = await call<{ next: number }>(relay.url, 'GET', '/api/v1/receipts', undefined, alice.auth);
    const e = sealFor(alice, bob, 'ack me');
    await send(alice, [e]);
    const a = await ack(bob, e.header.message_id);
    expect(a).toMatchObject({ status: 200, body: { message_id: e.header.message_id, already: false } });
    expect((await pending(bob)).body.envelopes).toHaveLength(0);
    expect((await ack(bob, e.header.message_id)).body).toMatchObject({ already: true });
    const receipts = await call<{ receipts: Array<{ message_id: string; recipient: string }>; next: number }>(
      relay.url,
      'GET',
      `/api/v1/receipts?since=${before.body.next}`,
      undefined,
      alice.auth,
    );
    expect(receipts.body.receipts.map((r) => [r.message_id, r.recipient])).toEqual([[e.header.message_id, 'bob']]);
    // bob sees no receipts for alice's message
    expect(
      (
        await call<{ receipts: unknown[] }>(relay.url, 'GET', '/api/v1/receipts', undefined, bob.auth)
      ).body.receipts.every((r) => (r as { message_id: string }).message_id !== e.header.message_id),
    ).toBe(true);
  });

  it('pending long-polls until an envelope arrives', async () => {
    const poll = pending(bob, '?wait=10');
    await new Promise((r) => setTimeout(r, 400));
    const e = sealFor(alice, bob, 'late');
    await send(alice, [e]);
    const res = await poll;
    expect(res.body.envelopes.map((x) => x.message_id)).toEqual([e.header.message_id]);
    await drain(bob);
  });

  it('pages with limit and the cursor', async () => {
    const es = [1, 2, 3].map((i) => sealFor(alice, bob, `page ${i}`));
    await send(alice, es);
    const first = await pending(bob, '?limit=2');
    expect(first.body.more).toBe(true);
    expect(first.body.envelopes.map((x) => x.message_id)).toEqual(es.slice(0, 2).map((e) => e.header.message_id));
    const next = await pending(bob, `?limit=2&after=${first.body.envelopes[1]!.cursor}`);
    expect(next.body).toMatchObject({ more: false });
    expect(next.body.envelopes.map((x) => x.message_id)).toEqual([es[2]!.header.message_id]);
    await drain(bob);
  });

  it('the event stream delivers the backlog and new envelopes as they arrive', async () => {
    const early = sealFor(alice, bob, 'backlog');
    await send(alice, [early]);
    const abort = new AbortController();
    const res = await fetch(`${relay.url}/api/v1/messages/stream`, { headers: bob.auth, signal: abort.signal });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const seen: string[] = [];
    let buffer = '';
    const late = sealFor(alice, bob, 'live');
    setTimeout(() => void send(alice, [late]), 300);
    while (seen.length < 2) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += new TextDecoder().decode(value);
      for (let i = buffer.indexOf('\n\n'); i >= 0; i = buffer.indexOf('\n\n')) {
        const event = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const data = /^data: (.*)$/m.exec(event)?.[1];
        if (/^event: envelope$/m.test(event) && data)
          seen.push((JSON.parse(data) as { message_id: string }).message_id);
      }
    }
    abort.abort();
    expect(seen).toEqual([early.header.message_id, late.header.message_id]);
    await drain(bob);
  });
});

describe('isolation and policy', () => {
  it('an agent of another tenant can neither be addressed nor read anything', async () => {
    const toCarol = sealFor(alice, carol, 'cross-tenant');
    expect(await send(alice, [toCarol])).toMatchObject({ status: 404, body: { error: 'unknown_recipient' } });
    const asGlobex = sealFor(alice, bob, 'x', { tenant_id: 'globex' });
    expect(await send(alice, [asGlobex])).toMatchObject({ status: 400, body: { error: 'envelope_binding_mismatch' } });
    const fromCarol = sealFor(carol, bob, 'hi from globex');
    expect(await send(carol, [fromCarol])).toMatchObject({ status: 404, body: { error: 'unknown_recipient' } });
    const e = sealFor(alice, bob, 'private');
    await send(alice, [e]);
    expect((await pending(carol)).body.envelopes).toHaveLength(0);
    expect(await ack(carol, e.header.message_id)).toMatchObject({ status: 404, body: { error: 'unknown_message' } });
    expect(await call(relay.url, 'GET', '/api/v1/agents/bob', undefined, carol.auth)).toMatchObject({ status: 404 });
    await drain(bob);
  });

  it("on the bus each tenant's envelopes live in its own account, unseen by the other", async () => {
    // A user of each tenant's account, minted from the relay's own keys on disk, on the
    // relay's own nats-server: what an edge of that tenant could ever see.
    const layout = natsLayout(busRoot(relay.dataDir));
    const port = /^port: (\d+)$/m.exec(readFileSync(layout.configFile, 'utf8'))?.[1];
    const tenantUser = async (tenant: string): Promise<NatsConnection> => {
      const files = tenantFiles(layout, tenant);
      const [account, signing] = await Promise.all([
        readSeedFile(files.accountSeedFile, 'account'),
        readSeedFile(files.signingSeedFile, 'account'),
      ]);
      const user = createUser();
      const jwt = await userJwt(user, account.getPublicKey(), signing, {
        name: `isolation-${tenant}`,
      });
      return connectWithCreds(`nats://127.0.0.1:${port}`, credsFile(jwt, user), `isolation-${tenant}`, {
        reconnect: false,
      });
    };
    const [acme, globex] = await Promise.all([tenantUser('acme'), tenantUser('globex')]);
    try {
      const live = { acme: [] as string[], globex: [] as string[] };
      acme.subscribe('msg.>', {
        callback: (_e, m) => {
          live.acme.push(m.subject);
        },
      });
      globex.subscribe('msg.>', {
        callback: (_e, m) => {
          live.globex.push(m.subject);
        },
      });
      await Promise.all([acme.flush(), globex.flush()]);

      const toBob = sealFor(alice, bob, 'acme only');
      const toDave = sealFor(carol, dave, 'globex only');
      expect((await send(alice, [toBob])).status).toBe(202);
      expect((await send(carol, [toDave])).status).toBe(202);

      const stored = async (nc: NatsConnection): Promise<string[]> => {
        const jsm = await jetstreamManager(nc);
        const { state } = await jsm.streams.info('SVC_MSGS');
        const ids: string[] = [];
        for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
          const m = await jsm.streams.getMessage('SVC_MSGS', { seq });
          if (m) ids.push((m.json() as { header: { message_id: string } }).header.message_id);
        }
        return ids;
      };
      const [inAcme, inGlobex] = await Promise.all([stored(acme), stored(globex)]);
      expect(inAcme).toContain(toBob.header.message_id);
      expect(inAcme).not.toContain(toDave.header.message_id);
      expect(inGlobex).toEqual([toDave.header.message_id]);
      await Promise.all([acme.flush(), globex.flush()]);
      expect(live.acme).toContain('msg.bob');
      expect(live.acme).not.toContain('msg.dave');
      expect(live.globex).toEqual(['msg.dave']);
    } finally {
      await Promise.all([acme.close(), globex.close()]);
    }
    await drain(bob);
    await drain(dave);
  });

  it("the sender is the token's agent: a forged sender is refused", async () => {
    const forged = sealFor(alice, bob, 'I am carol', { sender: 'mallory' });
    expect(await send(alice, [forged])).toMatchObject({ status: 403, body: { error: 'sender_mismatch' } });
  });

  it("someone else's message id cannot be acknowledged", async () => {
    const e = sealFor(alice, bob, 'mine');
    await send(alice, [e]);
    expect(await ack(alice, e.header.message_id)).toMatchObject({ status: 404, body: { error: 'unknown_message' } });
    expect((await pending(bob)).body.envelopes).toHaveLength(1);
    await drain(bob);
  });

  it('a recipient that blocked the sender gets nothing', async () => {
    expect((await call(relay.url, 'POST', '/api/v1/agents/alice/block', undefined, bob.auth)).status).toBeLessThan(300);
    const e = sealFor(alice, bob, 'blocked?');
    expect((await send(alice, [e])).status).toBe(202);
    expect((await pending(bob)).body.envelopes).toHaveLength(0);
    expect((await call(relay.url, 'DELETE', '/api/v1/agents/alice/block', undefined, bob.auth)).status).toBeLessThan(
      300,
    );
    const after = sealFor(alice, bob, 'unblocked');
    await send(alice, [after]);
    expect((await pending(bob)).body.envelopes.map((x) => x.message_id)).toEqual([after.header.message_id]);
    await drain(bob);
  });
});

describe('bad input gets a 4xx with a code, never a 5xx', () => {
  it('malformed JSON, wrong types, missing parts, oversize, unknown recipient, no token', async () => {
    const good = sealFor(alice, bob, 'ok');
    const cases: Array<[unknown, number, string]> = [
      ['{"envelopes":[', 400, 'invalid_json'],
      [{ envelopes: 'x' }, 400, 'validation_failed'],
      [{ envelopes: [] }, 400, 'validation_failed'],
      [{ envelopes: [{ ...good, signature: 5 }] }, 400, 'validation_failed'],
      [{ envelopes: [{ ...good, header: { ...good.header, message_id: 'not-a-uuid' } }] }, 400, 'envelope_malformed'],
      [{ envelopes: [{ ...good, enc: 'AAAA' }] }, 400, 'envelope_malformed'],
      [{ envelopes: [sealFor(alice, { number: 'nobody', keys: bob.keys }, 'x')] }, 404, 'unknown_recipient'],
      [{ envelopes: [sealFor(alice, bob, 'x'.repeat(300 * 1024))] }, 413, 'envelope_too_large'],
      [{ envelopes: Array.from({ length: 101 }, () => good) }, 400, 'validation_failed'],
    ];
    for (const [body, status, code] of cases) {
      const res = await call(relay.url, 'POST', '/api/v1/messages', body, alice.auth);
      expect([res.status, (res.body as { error: string }).error]).toEqual([status, code]);
    }
    expect((await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [good] })).status).toBe(401);
    for (const q of ['?wait=31', '?wait=abc', '?limit=0', '?limit=101', '?x=1']) {
      expect((await pending(bob, q)).status).toBe(400);
    }
    expect((await ack(bob, newMessageId())).status).toBe(404);
    expect((await pending(bob)).body.envelopes).toHaveLength(0); // nothing half-stored
  });
});

describe('nothing lost', () => {
  it('an accepted envelope survives a restart of the relay and a crash of nats-server until acknowledged', async () => {
    const es = [1, 2, 3].map((i) => sealFor(alice, bob, `durable ${i}`));
    expect((await send(alice, es)).status).toBe(202);

    // nats-server crashes: the relay restarts it and nothing accepted is lost
    const nats = relay.natsPid();
    process.kill(nats, 'SIGKILL');
    await until(() => !processAlive(nats), 5_000, 'nats-server to exit');
    const inbox = await until(
      async () => {
        const r = await pending(bob);
        return r.status === 200 ? r : undefined;
      },
      15_000,
      'the inbox to answer again',
    );
    expect(inbox.body.envelopes.map((x) => x.message_id)).toEqual(es.map((e) => e.header.message_id));

    // the relay itself restarts
    expect(await relay.stop()).toBe(0);
    relay = await spawnRelay({ dataDir: relay.dataDir, env: relay.env, init: false, port: relay.port });
    const after = await pending(bob);
    expect(after.body.envelopes.map((x) => openFor(bob, x.envelope, alice.keys.signPublic))).toEqual([
      'durable 1',
      'durable 2',
      'durable 3',
    ]);
    for (const e of es) expect((await ack(bob, e.header.message_id)).status).toBe(200);
    expect((await pending(bob)).body.envelopes).toHaveLength(0);
  }, 60_000);
});
