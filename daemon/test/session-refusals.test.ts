/**
 * What a daemon's session does when the relay stops taking its credentials. Its message
 * stream outlives no access token: the relay ends it when the token expires, and the daemon
 * connects again with a fresh one, resuming where it was (the relay runs in this process so
 * that its clock can pass the token's expiry while the daemon's does not, which is also what
 * a daemon whose clock lags the relay's sees). An agent the relay no longer knows (revoked)
 * is shown as refused, with what to do, and asks again only now and then.
 */
import { ACCESS_TOKEN_TTL_SECONDS } from '@svc/shared';
import { until } from '@svc/test-harness';
import { startDaemon, type TestDaemon, trustRelay } from '@svc/test-harness/daemon';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DaemonEvent, DaemonEventStream } from '../src/client/index.js';

let relay: BusRelay;
let d: TestDaemon;
let stream: DaemonEventStream;
const events: DaemonEvent[] = [];

beforeAll(async () => {
  [relay, d] = await Promise.all([inProcessBusRelay(), startDaemon()]);
  await trustRelay(relay, d);
  stream = await d.client.events();
  void (async () => {
    for await (const e of stream) events.push(e);
  })();
}, 60_000);

afterAll(async () => {
  stream?.close();
  await d?.daemon.close();
  await relay?.close();
});

const register = async (agentId: string) =>
  d.client.register({ enrollment_code: await relay.grant(agentId), name: agentId });

it('a revoked agent: the session says refused, a send says what to do, and sign-ins slow down', async () => {
  const ctx = relay.relay.context;
  await register('carol');
  const connected = (e: DaemonEvent) => e.type === 'session' && e.agent === 'carol' && e.state === 'connected';
  await until(() => events.some(connected), 15_000, 'carol connected');
  const from = relay.logLines.length;
  await ctx.ledger.revokeAgent(ctx.config.defaultTenant, 'carol', ctx.now());
  // her stream ends at its next look at the ledger (the revocation is offline); the daemon's
  // token is dead, its API key too, and its sign-in with her own identity key is refused
  await until(
    () => events.some((e) => e.type === 'session' && e.agent === 'carol' && e.state === 'refused'),
    30_000,
    'carol refused',
  );
  expect((await d.client.status()).agents.find((a) => a.name === 'carol')?.session).toBe('refused');
  await expect(d.client.send('carol', { to: 'alice', content: 'anyone there?' })).rejects.toMatchObject({
    code: 'invalid_sign_in',
    message: expect.stringContaining('svc deregister --local carol'),
  });

  // at the daemon's reconnect pace (at most 0.5 s here) this would be a sign-in every half second
  const signIns = () =>
    relay.logLines
      .slice(from)
      .filter((l) => (JSON.parse(l) as { req?: { url?: string } }).req?.url === '/api/v1/auth/sign-in').length;
  const before = signIns();
  await new Promise((r) => setTimeout(r, 5_000));
  expect(signIns() - before).toBe(0);
}, 90_000);

// last: it moves the relay's clock on, past what an enrollment proof may lag
it('after the relay passes the token expiry, the stream ends and the daemon reconnects and receives', async () => {
  await register('alice');
  await register('bob');
  // both streams open before the clock moves (one opened after would be refused, and counted below)
  for (const agent of ['alice', 'bob']) {
    await until(
      () => events.some((e) => e.type === 'session' && e.agent === agent && e.state === 'connected'),
      15_000,
      `${agent} connected`,
    );
  }

  const from = events.length;
  relay.advance(ACCESS_TOKEN_TTL_SECONDS * 1000 + 1000);
  const sent = await d.client.send('alice', { to: 'bob', content: 'still there after the token expired?' });
  await until(
    () => events.find((e) => e.type === 'message' && e.message.message_id === sent.message_id),
    20_000,
    'the message at bob',
  );
  // it came on a new stream: the one opened with the expired token was ended by the relay
  expect(relay.logLines.some((l) => l.includes('message stream ended: its access token expired'))).toBe(true);
  // and the daemon took a fresh token for it at once, instead of learning from a refused connect
  const lines = relay.logLines.map(
    (l) => JSON.parse(l) as { reqId?: string; req?: { url?: string }; res?: { statusCode?: number } },
  );
  const streamRequests = new Set(lines.filter((l) => l.req?.url === '/api/v1/messages/stream').map((l) => l.reqId));
  const refused = lines.filter((l) => streamRequests.has(l.reqId) && l.res?.statusCode === 401);
  expect(refused).toEqual([]);
  // a token renewal is no news: bob was never shown connecting meanwhile
  expect(events.slice(from).filter((e) => e.type === 'session' && e.agent === 'bob')).toEqual([]);
}, 90_000);
