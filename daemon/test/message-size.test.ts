/**
 * A message too large for the relay is refused by the daemon as envelope_too_large, naming
 * the limit in UTF-8 bytes of content, whether it passes the request's body limit or not,
 * on the socket and through the dashboard alike (a body over 2 MiB was "Request body is too
 * large (bad_request)", and 1 MiB of characters a schema limit that was not the real one).
 */
import { MESSAGE_LIMITS } from '@svc/shared';
import { startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { signInDashboard } from '@svc/test-harness/dashboard-session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let d: TestDaemon;
beforeAll(async () => {
  d = await startDaemon();
  await d.client.registerLocal({ name: 'ann' });
});
afterAll(async () => {
  await d?.daemon.close();
});

const LIMIT = MESSAGE_LIMITS.maxContentBytes;

describe('a message larger than one message holds', () => {
  it.each([
    ['one byte over', 'x'.repeat(LIMIT + 1)],
    ['fewer characters than bytes', '日'.repeat(LIMIT / 3 + 1)],
    ['over a mebibyte of characters', 'x'.repeat(1024 * 1024 + 1)],
  ])('%s: envelope_too_large with its size and the limit', async (_what, content) => {
    await expect(d.client.send('ann', { to: 'bob', content })).rejects.toMatchObject({
      code: 'envelope_too_large',
      message: `The message is too large: its content is ${Buffer.byteLength(content)} bytes of UTF-8, and one message holds at most ${LIMIT}; split it into several messages.`,
    });
  });

  it('a body over the request limit: envelope_too_large with the limit, on the socket and through the dashboard', async () => {
    const content = '日'.repeat(800_000); // 2.4 MB of UTF-8
    const expected = {
      error: 'envelope_too_large',
      message: `The message is too large: one message holds at most ${LIMIT} bytes of content (UTF-8); split it into several messages.`,
    };
    await expect(d.client.send('ann', { to: 'bob', content })).rejects.toMatchObject({
      code: expected.error,
      message: expected.message,
    });
    const launch = await d.client.openDashboard({ port: 0 });
    const { headers } = await signInDashboard(launch.url);
    const res = await fetch(`${launch.base_url}/api/v1/agents/ann/send`, {
      method: 'POST',
      headers: { ...headers, origin: launch.base_url, 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'bob', content }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual(expected);
  });
});
