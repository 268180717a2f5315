/**
 * When an event stream ends on the relay's side: when the access token it was opened with
 * expires (a stream is a request, and no request outlives its token), and at once when its
 * agent, revoked offline, enrolls again before any cleanup round saw the revocation. The
 * whole relay in this process (its clock can be moved on, its cleanup round held off), a real
 * nats-server and a real socket.
 */
import { ACCESS_TOKEN_TTL_SECONDS } from '@svc/shared';
import { until } from '@svc/test-harness';
import { call, enrollAgent, openMessageStream, sealFor, signIn } from '@svc/test-harness/agent-client';
import { inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { expect, it } from 'vitest';
import { mintGrant } from '../src/index.js';

it('a stream whose token expired ends with invalid_token at the next envelope; the envelope stays pending', async () => {
  const relay = await inProcessBusRelay();
  try {
    const [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
    const stream = openMessageStream(relay.url, bob.auth);
    await stream.opened;

    // bob's token is past its expiry; alice signs in again for a fresh one
    relay.advance(ACCESS_TOKEN_TTL_SECONDS * 1000 + 1000);
    const envelope = sealFor(alice, bob, 'hi');
    const sent = await call(
      relay.url,
      'POST',
      '/api/v1/messages',
      { envelopes: [envelope] },
      (await signIn(relay.url, alice)).auth,
    );
    expect(sent.status).toBe(202);

    await until(() => stream.events.some((e) => e.kind === 'error'), 20_000, "the stream's error event");
    const error = stream.events.find((e) => e.kind === 'error');
    expect(JSON.parse(error?.kind === 'error' ? error.data : '{}')).toMatchObject({
      error: 'invalid_token',
      message: expect.stringMatching(/expired/),
    });
    expect(stream.messageIds()).toEqual([]);
    stream.close();

    // nothing lost: the envelope waits in bob's inbox for his next stream
    const row = await relay.relay.context.ledger.activeAgent(bob.tenantId, 'bob');
    if (!row) throw new Error('bob is not enrolled');
    const page = await relay.relay.context.messaging.pending(row, { after: 0, limit: 10, waitMs: 0 });
    expect(page.envelopes.map((e) => e.message_id)).toEqual([envelope.header.message_id]);
  } finally {
    await relay.close();
  }
}, 90_000);

it('an agent revoked offline that enrolls again before any cleanup round: its old stream ends at once', async () => {
  // no cleanup round: only the re-enrollment can tell the stream
  const relay = await inProcessBusRelay({}, { cleanupIntervalMs: 3_600_000 });
  try {
    const ctx = relay.relay.context;
    const bob = await relay.enroll('bob');
    const stream = openMessageStream(relay.url, bob.auth);
    await stream.opened;
    // as `svc-relay agent revoke` does beside the running relay: the ledger row alone
    await ctx.ledger.revokeAgent(bob.tenantId, 'bob', ctx.now());
    const grant = await mintGrant(ctx, {
      tenantId: bob.tenantId,
      agentId: 'bob',
      capabilities: ['http-relay'],
      createdBy: 'test',
    });
    await enrollAgent(relay.url, grant.enrollment_code);
    // well before the stream's own look at the ledger, 15 s after it opened
    const error = await until(() => stream.events.find((e) => e.kind === 'error'), 10_000, 'the old stream to end');
    expect(JSON.parse(error.kind === 'error' ? error.data : '{}')).toMatchObject({ error: 'invalid_token' });
    stream.close();
  } finally {
    await relay.close();
  }
}, 90_000);
