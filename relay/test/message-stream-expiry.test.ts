/**
 * An event stream ends when the access token it was opened with expires: a stream is a
 * request, and no request outlives its token. The whole relay in this process (its clock
 * can be moved on), a real nats-server and a real socket.
 */
import { ACCESS_TOKEN_TTL_SECONDS } from '@svc/shared';
import { until } from '@svc/test-harness';
import { call, openMessageStream, sealFor, signIn } from '@svc/test-harness/agent-client';
import { inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { expect, it } from 'vitest';

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
