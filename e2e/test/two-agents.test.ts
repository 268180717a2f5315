/**
 * The whole system as real processes: a relay (with its nats-server) and two agents on
 * separate SVC_HOMEs, each driven only through the `svc` CLI, which autostarts a daemon
 * per home. Both agents register with codes minted by `svc-relay grant`, exchange
 * messages both ways while `svc watch --json` prints them as they arrive; `inbox`, `read`,
 * `msg check`, `msg ack` and `msg search` answer from the archives; a forged envelope
 * posted straight to the relay is refused and reported; the daemons survive a relay
 * restart and catch up. On a failure the daemon and relay logs are printed and kept.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { ArchivedMessage, LocalAgent, SentMessage } from '@svc/daemon/client';
import { fromBase64url } from '@svc/shared';
import { running, tail, until } from '@svc/test-harness';
import { call, identityFromSeed, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { grantCode, type RelayProcess, spawnRelay } from '@svc/test-harness/relay-process';
import {
  daemonLog,
  daemonPid,
  type Home,
  newHome,
  startWatch,
  svc,
  svcJson,
  type Watch,
} from '@svc/test-harness/svc-cli';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

let relay: RelayProcess;
const relayLogs: string[] = [];
const homes: { a: Home; b: Home } = { a: newHome('alice'), b: newHome('bob') };
const agents: { a?: LocalAgent; b?: LocalAgent } = {};
const watches: { a?: Watch; b?: Watch } = {};
/** every pid this test started or learned of; none may survive */
const pids = new Map<number, string>();
let failed = false;

// ids of the messages, in the order they were sent
const ids: Record<string, string> = {};

function report(): void {
  failed = true;
  const parts = [`relay data dir ${relay?.dataDir}`];
  for (const file of relayLogs) parts.push(`=== relay log ${file}\n${tail(file)}`);
  for (const [key, home] of Object.entries(homes)) {
    parts.push(`=== ${home.label} SVC_HOME ${home.dir}\n--- ${daemonLog(home)}\n${tail(daemonLog(home))}`);
    const start = join(home.dir, 'logs', 'daemon-start.log');
    if (existsSync(start)) parts.push(`--- ${start}\n${tail(start, 20)}`);
    const w = watches[key as 'a' | 'b'];
    if (w) parts.push(`--- svc watch (${home.label}) stdout\n${w.stdout()}--- stderr\n${w.stderr()}`);
  }
  console.error(`e2e failure; logs kept:\n${parts.join('\n')}`);
}

const grant = (agentId: string) => grantCode(relay, agentId, ['--tenant', 'acme']);

/** Open connections to a daemon's socket, from /proc/net/unix (accepted sockets carry the path). */
function socketConnections(home: Home): number | undefined {
  const path = join(home.dir, 'run', 'daemon.sock');
  if (!existsSync('/proc/net/unix')) return undefined;
  return readFileSync('/proc/net/unix', 'utf8')
    .split('\n')
    .filter((l) => l.endsWith(` ${path}`) && l.trim().split(/\s+/)[5] === '03').length;
}

/** Waits until the watch holds its event stream open (a connection that stays across two polls). */
async function watchSubscribed(home: Home, watch: Watch): Promise<void> {
  if (socketConnections(home) === undefined) {
    // no procfs: the CLI prints nothing when it subscribes; give it time to boot
    await new Promise((r) => setTimeout(r, 5000));
    return;
  }
  let seen = 0;
  await until(
    () => {
      if (watch.child.exitCode !== null) throw new Error(`svc watch exited early: ${watch.stderr()}`);
      seen = (socketConnections(home) ?? 0) >= 1 ? seen + 1 : 0;
      return seen >= 3;
    },
    30_000,
    `svc watch of ${home.label} subscribed`,
    200,
  );
}

const watchLine = (w: Watch, messageId: string, who: string) =>
  until(() => w.lines.find((l) => l.message_id === messageId), 30_000, `${who}'s svc watch prints ${messageId}`);

const send = (home: Home, to: string, text: string) => svcJson<SentMessage>(home, ['send', to, '-m', text, '--json']);

beforeAll(async () => {
  relay = await spawnRelay({ env: { SVC_RELAY_TENANTS: 'acme' } });
  relayLogs.push(relay.logFile);
  pids.set(relay.child.pid!, 'relay');
  pids.set(relay.natsPid(), 'nats-server');
}, 60_000);

beforeEach(({ onTestFailed }) => {
  onTestFailed(report);
});

afterAll(async () => {
  // safety net: the last test stops everything and checks it; this only reaps leftovers by pid
  for (const w of Object.values(watches)) await w?.stop();
  for (const home of Object.values(homes)) await svc(home, ['--no-autostart', 'stop']).catch(() => undefined);
  await relay?.stop();
  for (const [pid, what] of pids) {
    if (running(pid)) {
      console.error(`e2e: ${what} (pid ${pid}) was still running; killing it`);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  if (failed) return; // keep homes and the relay data dir with their logs
  for (const home of Object.values(homes)) rmSync(home.dir, { recursive: true, force: true });
  if (relay) rmSync(relay.dataDir, { recursive: true, force: true });
}, 60_000);

describe('e2e: two agents, two daemons, one relay, all through the svc CLI', () => {
  it('trusts the deployment and registers both agents with codes minted by svc-relay grant', async () => {
    const bundle = join(relay.dataDir, 'deployment', 'trust-bundle.json');
    const setUp = async (home: Home, agentId: string) => {
      const [d, code] = await Promise.all([
        svcJson<{ name: string; api_url: string; tenants: string[] }>(home, [
          'deployment',
          'fetch',
          '--url',
          relay.url,
          '--trust',
          bundle,
          '--name',
          'dev',
          '--json',
        ]),
        grant(agentId),
      ]);
      expect(d).toMatchObject({ name: 'dev', api_url: relay.url, tenants: ['acme'] });
      return svcJson<LocalAgent>(home, ['register', '--enrollment-grant', code, '--json']);
    };
    [agents.a, agents.b] = await Promise.all([setUp(homes.a, 'alice'), setUp(homes.b, 'bob')]);
    // registration waited until each receives
    expect(agents.a).toMatchObject({
      name: 'alice',
      agent_number: 'alice',
      tenant_id: 'acme',
      deployment: 'dev',
      receiving: true,
    });
    expect(agents.b).toMatchObject({ name: 'bob', agent_number: 'bob', tenant_id: 'acme', deployment: 'dev' });
    for (const home of [homes.a, homes.b]) {
      const pid = daemonPid(home);
      expect(pid, `daemon pid file in ${home.dir}`).toBeDefined();
      pids.set(pid!, `daemon of ${home.label}`);
    }
    // the API key lives in the encrypted vault, not in the agent file
    expect(readFileSync(join(homes.a.dir, 'agents', 'alice', 'agent.json'), 'utf8')).not.toMatch(/svc_ak_/);
    expect(readFileSync(join(homes.a.dir, 'vault.json'), 'utf8')).not.toMatch(/svc_ak_/);

    // both watches run from here on; an empty inbox on each side meanwhile
    watches.a = startWatch(homes.a, ['--as', 'alice']);
    watches.b = startWatch(homes.b, ['--as', 'bob']);
    pids.set(watches.a.pid, 'svc watch of alice');
    pids.set(watches.b.pid, 'svc watch of bob');
    const [inboxA, inboxB] = await Promise.all([
      svcJson<ArchivedMessage[]>(homes.a, ['inbox', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['inbox', '--json']),
    ]);
    expect(inboxA).toEqual([]);
    expect(inboxB).toEqual([]);
    await Promise.all([watchSubscribed(homes.a, watches.a), watchSubscribed(homes.b, watches.b)]);
  }, 90_000);

  it('svc deployment diagnose: the document verifies now; after it expires, exit 1 naming the step that fails', async () => {
    const now = await svc(homes.a, ['deployment', 'diagnose', 'dev']);
    expect(now.code, now.stderr).toBe(0);
    expect(now.stdout).toMatch(/^Deployment dev \(\S+\) at \S+: verifies; nothing to do\.\n/);
    expect(now.stdout).toMatch(/^ {2}ok {4}signature +the signature verifies with \S+$/m);
    const info = await svcJson<{ deployment_id: string; expires_at: string }>(homes.a, [
      'deployment',
      'inspect',
      'dev',
      '--json',
    ]);
    const after = new Date(Date.parse(info.expires_at) + 1000).toISOString();
    // by its id, as the command's argument allows
    const late = await svc(homes.a, ['deployment', 'diagnose', info.deployment_id, '--at', after]);
    expect(late.code).toBe(1);
    expect(late.stdout).toContain(`Deployment dev (${info.deployment_id}) at ${after}: does not verify.\n`);
    expect(late.stdout).toMatch(/^ {2}FAIL {2}validity +deployment_expired: the deployment document expired at /m);
    expect(late.stdout).toMatch(/^ {2}-- {4}renewal +not checked: the document has expired$/m);
    const json = await svc(homes.a, ['deployment', 'diagnose', 'dev', '--at', after, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ name: 'dev', at: after, verifies: false, ok: false });
    // svc doctor --api-url: the relay answers, is ready, and is the deployment trusted here
    const doctor = await svc(homes.a, ['doctor', '--api-url', relay.url, '--json']);
    expect(JSON.parse(doctor.stdout).relay).toMatchObject({ url: relay.url, ok: true });
    const human = await svc(homes.a, ['doctor', '--api-url', relay.url]);
    expect(human.stdout).toMatch(
      /^relay: +http:\/\/127\.0\.0\.1:\d+: url ok, healthz ok, readyz ok, document ok, trusted ok, api_url ok$/m,
    );
    const unknown = await svc(homes.a, ['deployment', 'diagnose', 'nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No trusted deployment with the name or id "nope"\. \(unknown_deployment\)/);
  });

  it('exchanges messages both ways; svc watch --json prints each as it arrives', async () => {
    const first = await send(homes.a, 'bob', 'hello bob, the budget meeting is at noon');
    expect(first).toMatchObject({ to: 'bob', conversation_id: 'dm:alice:bob', status: 'accepted' });
    ids.first = first.message_id;
    const line = await watchLine(watches.b!, first.message_id, 'bob');
    expect(line).toMatchObject({
      agent: 'bob',
      message_id: first.message_id,
      conversation_id: 'dm:alice:bob',
      conversation_type: 'direct',
      direction: 'inbound',
      from: 'alice',
      to: 'bob',
      content_type: 'text',
      content: 'hello bob, the budget meeting is at noon',
      sent_at: first.sent_at,
    });
    expect(line.received_at).toEqual(expect.any(String));

    const answer = await send(homes.b, 'alice', 'see you at noon, alice');
    expect(answer).toMatchObject({ to: 'alice', conversation_id: 'dm:alice:bob', status: 'accepted' });
    ids.answer = answer.message_id;
    expect(await watchLine(watches.a!, answer.message_id, 'alice')).toMatchObject({
      agent: 'alice',
      direction: 'inbound',
      from: 'bob',
      to: 'alice',
      content: 'see you at noon, alice',
    });
    // watch prints inbound messages only: nobody sees their own sent message
    expect(watches.a!.lines.map((l) => l.message_id)).not.toContain(first.message_id);
    expect(watches.b!.lines.map((l) => l.message_id)).not.toContain(answer.message_id);
    expect(watches.a!.stderr() + watches.b!.stderr()).toBe('');
  }, 90_000);

  it('inbox, read and msg check answer from the archive; msg ack removes from the pending inbox', async () => {
    const second = await send(homes.a, 'bob', 'second point: the budget needs a vote');
    ids.second = second.message_id;
    await watchLine(watches.b!, second.message_id, 'bob');

    // read-only views, side by side: bob's inbox, the conversation on both sides (read takes
    // the peer's number or the conversation id)
    const [inbox, threadB, threadA, last] = await Promise.all([
      svcJson<ArchivedMessage[]>(homes.b, ['inbox', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['read', 'alice', '--json']),
      svcJson<ArchivedMessage[]>(homes.a, ['read', 'bob', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['read', 'dm:alice:bob', '--last', '1', '--json']),
    ]);
    expect(inbox.map((m) => m.message_id).sort()).toEqual([ids.first, ids.second].sort());
    expect(inbox.every((m) => m.direction === 'inbound' && m.acked_at === null)).toBe(true);
    expect(threadB.map((m) => [m.direction, m.message_id, m.content])).toEqual([
      ['inbound', ids.first, 'hello bob, the budget meeting is at noon'],
      ['outbound', ids.answer, 'see you at noon, alice'],
      ['inbound', ids.second, 'second point: the budget needs a vote'],
    ]);
    expect(threadA.map((m) => [m.direction, m.message_id])).toEqual([
      ['outbound', ids.first],
      ['inbound', ids.answer],
      ['outbound', ids.second],
    ]);
    expect(last.map((m) => m.message_id)).toEqual([ids.second]);

    // msg check returns the new inbound messages once
    const checked = await svcJson<ArchivedMessage[]>(homes.b, ['msg', 'check', '--json']);
    expect(checked.map((m) => m.message_id).sort()).toEqual([ids.first, ids.second].sort());
    expect(await svcJson(homes.b, ['msg', 'check', '--json'])).toEqual([]);

    const acked = await svcJson<{ message_id: string; acked_at: string }>(homes.b, [
      'msg',
      'ack',
      ids.first!,
      '--json',
    ]);
    expect(acked).toEqual({ message_id: ids.first, acked_at: expect.any(String) });
    const [after, reread, unknown, token] = await Promise.all([
      svcJson<ArchivedMessage[]>(homes.b, ['inbox', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['read', 'alice', '--json']),
      // an id nobody sent: a JSON error and exit 1
      svc(homes.b, ['msg', 'ack', '0190f0f0-0000-7000-8000-000000000000', '--json']),
      svcJson<{ access_token: string }>(homes.b, ['auth', 'token', '--json']),
    ]);
    expect(after.map((m) => m.message_id)).toEqual([ids.second]);
    // the archive keeps the acked message, now marked
    expect(reread.find((m) => m.message_id === ids.first)?.acked_at).toBe(acked.acked_at);
    expect(unknown.code).toBe(1);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ error: 'unknown_message' });

    // the daemon acked everything on the relay once archived: bob's relay queue is empty
    const pending = await until(
      async () => {
        const r = await call<{ envelopes: unknown[] }>(relay.url, 'GET', '/api/v1/messages/pending', undefined, {
          authorization: `Bearer ${token.access_token}`,
        });
        return r.status === 200 && r.body.envelopes.length === 0 ? r : undefined;
      },
      10_000,
      "bob's relay pending queue empty",
    );
    expect(pending.body.envelopes).toEqual([]);
  }, 120_000);

  it("the sender sees delivery: svc read shows delivered_at once the recipient's daemon has it", async () => {
    // bob's daemon archived these and acknowledged them on the relay; alice's session asks
    // for receipts while a sent message waits for one
    const thread = await until(
      async () => {
        const t = await svcJson<ArchivedMessage[]>(homes.a, ['read', 'bob', '--json']);
        return t.filter((m) => m.direction === 'outbound').every((m) => m.delivered_at !== null) ? t : undefined;
      },
      30_000,
      "receipts of alice's messages",
      500,
    );
    expect(thread.filter((m) => m.direction === 'outbound').map((m) => m.message_id)).toEqual([ids.first, ids.second]);
    expect(thread.filter((m) => m.direction === 'inbound').every((m) => m.delivered_at === null)).toBe(true);
    // sync asks too, and finds nothing new to record
    expect(await svcJson(homes.a, ['sync', '--json'])).toEqual([
      { agent: 'alice', fetched: 0, archived: 0, rejected: 0, receipts: 0 },
    ]);
  }, 60_000);

  it('msg search finds them in each archive', async () => {
    const [budgetA, budgetB, noonB, nothing] = await Promise.all([
      svcJson<ArchivedMessage[]>(homes.a, ['msg', 'search', 'budget', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['msg', 'search', 'budget', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['msg', 'search', 'see you noon', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['msg', 'search', 'nothing-like-this', '--json']),
    ]);
    expect(budgetA.map((m) => m.message_id).sort()).toEqual([ids.first, ids.second].sort());
    expect(budgetB.map((m) => m.message_id).sort()).toEqual([ids.first, ids.second].sort());
    expect(noonB.map((m) => m.message_id)).toEqual([ids.answer]);
    expect(nothing).toEqual([]);
  }, 60_000);

  it('a message holding terminal escapes is shown as text: inbox and msg search write them as \\x1b, --json keeps them', async () => {
    // clear the screen, then an OSC 52 clipboard write: a peer's words must never drive bob's terminal
    const hostile = 'look\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07 here';
    const sent = await send(homes.a, 'bob', hostile);
    ids.hostile = sent.message_id;
    await watchLine(watches.b!, sent.message_id, 'bob');
    const [inbox, thread, json] = await Promise.all([
      svc(homes.b, ['inbox']),
      svc(homes.b, ['msg', 'search', 'look']),
      svcJson<ArchivedMessage[]>(homes.b, ['msg', 'search', 'look', '--json']),
    ]);
    for (const r of [inbox, thread]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.replace(/\n/g, '')).not.toMatch(/\p{Cc}/u);
      expect(r.stdout).toContain('look\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07 here');
    }
    expect(json.find((m) => m.message_id === sent.message_id)?.content).toBe(hostile);
  }, 60_000);

  it('refuses a forged envelope and reports it on svc watch; it is never archived', async () => {
    // alice's real access token, but an envelope signed by a throwaway key claiming to be alice
    const [{ access_token }, bobKeys] = await Promise.all([
      svcJson<{ access_token: string }>(homes.a, ['auth', 'token', '--json']),
      svcJson<{ encryption_public_key: string }>(homes.b, ['keys', 'status', '--json']),
    ]);
    const auth = { authorization: `Bearer ${access_token}` };
    const dir = await call<{ current: { encryption_public_key: string } }>(
      relay.url,
      'GET',
      '/api/v1/agents/bob/keys',
      undefined,
      auth,
    );
    expect(dir.status).toBe(200);
    expect(dir.body.current.encryption_public_key).toBe(bobKeys.encryption_public_key);
    const impostor = identityFromSeed(randomBytes(32));
    const from: TestAgent = {
      agentId: agents.a!.agent_id,
      number: 'alice',
      tenantId: agents.a!.tenant_id,
      deploymentId: agents.a!.deployment_id,
      keys: impostor.keys,
      identity: impostor.identity,
      apiKey: '',
      token: access_token,
      auth,
    };
    const forged = sealFor(
      from,
      { number: 'bob', keys: { encPublic: fromBase64url(dir.body.current.encryption_public_key) } },
      'urgent: send me the password',
    );
    const forgedId = forged.header.message_id;
    const posted = await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [forged] }, auth);
    expect(posted.status, JSON.stringify(posted.body)).toBe(202);

    await until(() => watches.b!.stderr().includes(forgedId), 30_000, "bob's svc watch reports the rejection");
    expect(watches.b!.stderr()).toContain(
      `svc: warning: rejected message ${forgedId} from alice: envelope_bad_signature`,
    );
    expect(watches.b!.lines.map((l) => l.message_id)).not.toContain(forgedId);

    const [inbox, found, thread] = await Promise.all([
      svcJson<ArchivedMessage[]>(homes.b, ['inbox', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['msg', 'search', 'password', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['read', 'alice', '--json']),
    ]);
    expect(inbox.map((m) => m.message_id)).not.toContain(forgedId);
    expect(found).toEqual([]);
    expect(thread.map((m) => m.message_id)).not.toContain(forgedId);
  }, 90_000);

  it('survives a relay restart: a send while it is down is queued and sent after, the daemons reconnect and catch up', async () => {
    const first = { relay: relay.child.pid!, nats: relay.natsPid() };
    const t0 = Date.now();
    const code = await relay.stop('SIGTERM');
    const stopMs = Date.now() - t0;
    expect(code).toBe(0);
    expect(stopMs, 'relay SIGTERM with open event streams').toBeLessThan(15_000);
    await until(() => !running(first.relay) && !running(first.nats), 10_000, 'relay and its nats-server gone');

    // while the relay is down, svc send queues the sealed message (exit 0, state queued)
    const down = await svc(homes.a, ['send', 'bob', '-m', 'queued while the relay is down', '--json']);
    expect(down.code, down.stdout + down.stderr).toBe(0);
    const queued = JSON.parse(down.stdout) as { message_id: string; state: string };
    expect(queued.state).toBe('queued');
    console.info(`e2e: relay stopped in ${stopMs} ms; svc send while down → ${down.stdout.trim()}`);

    relay = await spawnRelay({ dataDir: relay.dataDir, env: relay.env, port: relay.port, init: false });
    relayLogs.push(relay.logFile);
    pids.set(relay.child.pid!, 'relay (restarted)');
    pids.set(relay.natsPid(), 'nats-server (restarted)');

    // the outbox sends the queued message once the relay answers
    expect(await watchLine(watches.b!, queued.message_id, 'bob')).toMatchObject({
      from: 'alice',
      content: 'queued while the relay is down',
    });
    // sent as soon as the relay answers, likely before bob's daemon has reconnected its stream
    const after = await send(homes.a, 'bob', 'after the restart, the budget is approved');
    ids.after = after.message_id;
    expect(await watchLine(watches.b!, after.message_id, 'bob')).toMatchObject({
      from: 'alice',
      content: 'after the restart, the budget is approved',
    });
    const back = await send(homes.b, 'alice', 'bob is back too');
    await watchLine(watches.a!, back.message_id, 'alice');

    const [threadB, threadA, inbox] = await Promise.all([
      svcJson<ArchivedMessage[]>(homes.b, ['read', 'alice', '--json']),
      svcJson<ArchivedMessage[]>(homes.a, ['read', 'bob', '--json']),
      svcJson<ArchivedMessage[]>(homes.b, ['inbox', '--json']),
    ]);
    const idsB = threadB.map((m) => m.message_id);
    expect(new Set(idsB).size, 'no duplicates in bob archive').toBe(idsB.length);
    // both sides hold the whole thread, in order
    const thread = [
      ids.first,
      ids.answer,
      ids.second,
      ids.hostile,
      queued.message_id,
      after.message_id,
      back.message_id,
    ];
    expect(idsB).toEqual(thread);
    expect(threadA.map((m) => m.message_id)).toEqual(thread);
    expect(inbox.map((m) => m.message_id)).toEqual([ids.second, ids.hostile, queued.message_id, after.message_id]);
  }, 120_000);

  it('manages the webhook endpoint: the secret is printed once, status shows it set, clear removes both', async () => {
    type Hook = { endpoint_url: string | null; webhook_secret_set: boolean; webhook_secret?: string };
    const url = 'https://hooks.example.com/svc';
    const set = await svcJson<Hook>(homes.b, ['agent', 'webhook', 'set', url, '--as', 'bob', '--json']);
    expect(set).toMatchObject({ endpoint_url: url, webhook_secret_set: true });
    expect(set.webhook_secret).toMatch(/^[0-9a-f]{64}$/);
    const status = await svcJson<Hook>(homes.b, ['agent', 'webhook', 'status', '--as', 'bob', '--json']);
    expect(status).toMatchObject({ endpoint_url: url, webhook_secret_set: true });
    expect(JSON.stringify(status)).not.toContain(set.webhook_secret);
    // a private address is refused by the relay with its code, through the CLI
    const refused = await svc(homes.b, ['agent', 'webhook', 'set', 'https://127.0.0.1/hook', '--as', 'bob', '--json']);
    expect(refused.code).toBe(2); // a value to fix: a usage error
    expect(JSON.parse(refused.stdout)).toMatchObject({ error: 'invalid_endpoint_url' });
    const cleared = await svcJson<Hook>(homes.b, ['agent', 'webhook', 'clear', '--as', 'bob', '--json']);
    expect(cleared).toMatchObject({ endpoint_url: null, webhook_secret_set: false });
    const again = await svcJson<Hook>(homes.b, ['agent', 'webhook', 'set', url, '--as', 'bob', '--json']);
    expect(again.webhook_secret).toMatch(/^[0-9a-f]{64}$/);
    expect(again.webhook_secret).not.toBe(set.webhook_secret); // a new secret after clearing
    await svcJson(homes.b, ['agent', 'webhook', 'clear', '--as', 'bob', '--json']);
  }, 120_000);

  it('stops cleanly: watch ends on SIGTERM, svc stop ends each daemon, no process is left', async () => {
    const [wa, wb] = await Promise.all([watches.a!.stop(), watches.b!.stop()]);
    expect([wa, wb]).toEqual([0, 0]);
    const stops = await Promise.all([svc(homes.a, ['stop']), svc(homes.b, ['stop'])]);
    for (const s of stops)
      expect(s, `${s.stdout}${s.stderr}`).toMatchObject({ code: 0, stdout: 'Stopped the svc daemon.\n' });
    expect(await relay.stop('SIGTERM')).toBe(0);
    await until(
      () => [...pids.keys()].every((pid) => !running(pid)),
      15_000,
      `no process left of ${[...pids].map(([p, w]) => `${w} ${p}`).join(', ')}`,
    );
    const still = await svc(homes.a, ['--no-autostart', 'msg', 'check', '--json']);
    expect(JSON.parse(still.stdout)).toMatchObject({ error: 'daemon_unavailable' });
  }, 60_000);
});
