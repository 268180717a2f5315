/**
 * The relay built in one place: every route is registered whatever the bus does, and the
 * webhook schedule createRelay is given reaches the dispatcher.
 */

import { freePort, until } from '@svc/test-harness';
import { call, sealFor } from '@svc/test-harness/agent-client';
import { inProcessRelay } from '@svc/test-harness/in-process';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, describe, expect, it } from 'vitest';

describe('the message routes', () => {
  it('are registered even when the bus is down (no route is skipped)', async () => {
    const relay = await inProcessRelay();
    try {
      const alice = await relay.enroll('default', 'alice');
      for (const [method, url, payload] of [
        ['POST', '/api/v1/messages', { envelopes: [] }],
        ['GET', '/api/v1/messages/pending', undefined],
        ['GET', '/api/v1/receipts', undefined],
      ] as const) {
        const res = await relay.api(alice.token, method, url, payload);
        expect(res.statusCode, `${method} ${url}: ${res.body}`).not.toBe(404);
      }
    } finally {
      await relay.close();
    }
  });
});

describe('the scopes', () => {
  it('give every API route the error responses, and every agent route its security and token check', async () => {
    const relay = await inProcessRelay();
    try {
      const doc = (await relay.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as {
        paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>>;
      };
      let agentRoutes = 0;
      for (const [path, operations] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(operations)) {
          const name = `${method.toUpperCase()} ${path}`;
          expect(Object.keys(op.responses), name).toEqual(expect.arrayContaining(['4XX', '5XX']));
          if (JSON.stringify(op.security) !== JSON.stringify([{ accessToken: [] }])) continue;
          agentRoutes++;
          const url = path.replace(/\{[^}]+\}/g, 'x');
          const res = await relay.app.inject({ method: method.toUpperCase() as 'GET', url });
          expect(res.statusCode, name).toBe(401);
          expect(res.json(), name).toEqual({ error: 'missing_token', message: expect.any(String) });
        }
      }
      expect(agentRoutes).toBeGreaterThanOrEqual(20);
    } finally {
      await relay.close();
    }
  });
});

describe('the webhook schedule', () => {
  let relay: BusRelay | undefined;
  afterAll(async () => {
    await relay?.close();
  });

  it('comes from createRelay: a failed first attempt is retried after the configured delay', async () => {
    const HOUR = 3_600_000;
    relay = await inProcessBusRelay(
      { SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS: '1' },
      { webhooks: { retryDelaysMs: [HOUR], timeoutMs: 2_000 } },
    );
    const alice = await relay.enroll('alice');
    const bob = await relay.enroll('bob');
    // nothing listens there: the attempt fails at once and is retried
    const endpoint = `https://127.0.0.1:${await freePort()}/hook`;
    const patched = await call(relay.url, 'PATCH', '/api/v1/agents/me', { endpoint_url: endpoint }, bob.auth);
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const envelope = sealFor(alice, bob, 'hello');
    expect((await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [envelope] }, alice.auth)).status).toBe(202);

    const { context } = relay.relay;
    const bobRow = (await context.ledger.activeAgent('default', 'bob'))?.id as string;
    const row = await until(
      async () => {
        const r = await context.stores.webhooks.forMessage(bobRow, envelope.header.message_id);
        return r && r.attempts === 1 && r.last_error !== null ? r : undefined;
      },
      undefined,
      'the first attempt to fail',
    );
    expect(row.state).toBe('pending');
    expect((row.next_attempt_at as number) - (row.last_attempt_at as number)).toBeGreaterThanOrEqual(HOUR);
  });
});
