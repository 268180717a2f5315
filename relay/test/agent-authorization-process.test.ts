/**
 * Against a real relay process with its nats-server: an identity whose grant holds only
 * nats-relay cannot send or read messages (every agent route needs http-relay), and
 * after `svc-relay agent revoke` and a re-enrollment, a token of the earlier
 * incarnation is refused at once (the CLI takes about a second to start, so the
 * same-millisecond case is covered in process by agent-authorization.test.ts).
 */

import { call, enrollAgent, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { grantCode, type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: RelayProcess;

const grant = (agentId: string, capabilities: string[] = ['http-relay']) =>
  grantCode(relay, agentId, ['--capability', ...capabilities]);

beforeAll(async () => {
  relay = await spawnRelay({ env: { SVC_RELAY_TENANTS: 'acme' } });
}, 60_000);

afterAll(async () => {
  await relay?.stop();
});

const MISSING_CAPABILITY = { error: 'capability_required', message: expect.any(String) };

describe('capabilities', () => {
  it('a nats-relay-only identity cannot send, read its inbox or its profile', async () => {
    const uplink = await enrollAgent(relay.url, await grant('uplink', ['nats-relay']));
    const bob = await enrollAgent(relay.url, await grant('bob'));
    const envelopes = [sealFor(uplink, bob, 'hello from an uplink identity')];
    const sent = await call(relay.url, 'POST', '/api/v1/messages', { envelopes }, uplink.auth);
    expect([sent.status, sent.body]).toEqual([403, MISSING_CAPABILITY]);
    const pending = await call(relay.url, 'GET', '/api/v1/messages/pending', undefined, uplink.auth);
    expect([pending.status, pending.body]).toEqual([403, MISSING_CAPABILITY]);
    const me = await call(relay.url, 'GET', '/api/v1/agents/me', undefined, uplink.auth);
    expect([me.status, me.body]).toEqual([403, MISSING_CAPABILITY]);
    // nothing reached bob
    const inbox = await call<{ envelopes: unknown[] }>(
      relay.url,
      'GET',
      '/api/v1/messages/pending',
      undefined,
      bob.auth,
    );
    expect(inbox.status).toBe(200);
    expect(inbox.body.envelopes).toHaveLength(0);
  });
});

describe('revocation', () => {
  it('a token minted before `svc-relay agent revoke` is refused on the re-enrolled agent', async () => {
    const before: TestAgent = await enrollAgent(relay.url, await grant('alice'));
    expect((await call(relay.url, 'GET', '/api/v1/agents/me', undefined, before.auth)).status).toBe(200);
    const revoked = await runRelayCli(['agent', 'revoke', '--agent-id', 'alice', '--json'], relay.env);
    expect(revoked.code, revoked.stderr).toBe(0);
    const after = await enrollAgent(relay.url, await grant('alice'));
    const old = await call(relay.url, 'GET', '/api/v1/agents/me', undefined, before.auth);
    expect([old.status, old.body]).toEqual([401, { error: 'invalid_token', message: expect.any(String) }]);
    expect((await call(relay.url, 'GET', '/api/v1/agents/me', undefined, after.auth)).status).toBe(200);
  });
});
