/**
 * The message event stream follows the connection's pace: a reader that stops reading
 * makes the relay stop reading pages of its inbox (it holds one page, at most about 1 MiB
 * of envelopes, not the whole backlog once per stream). The whole relay in this process, with a real nats-server and a
 * real socket, so the page reads can be counted.
 */
import { connect, type Socket } from 'node:net';
import { MESSAGE_LIMITS } from '@svc/shared';
import { until } from '@svc/test-harness';
import { call, sealFor } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { describe, expect, it } from 'vitest';
import type { AgentRow } from '../src/ledger/ledger.js';

/** More than the stream's page of 100, each near the largest envelope the relay takes. */
const BACKLOG = 110;
// base64url makes 4 of 3: about 245 KB sealed, under the 256 KiB limit
const PLAINTEXT_CHARS = Math.floor(MESSAGE_LIMITS.maxEnvelopeBytes * 0.7);
/**
 * How long the stalled stream is given to read another page. Not a measure of the relay's
 * speed: with backpressure it never reads one however long it is given; without, it read the
 * next page right after writing the first, in milliseconds.
 */
const STALL_WINDOW_MS = 1500;

/** A GET of the stream on a socket that is read only once `read()` is called. */
function rawStream(base: string, auth: Record<string, string>) {
  const url = new URL(base);
  const socket: Socket = connect(Number(url.port), url.hostname);
  socket.pause();
  socket.write(
    `GET /api/v1/messages/stream HTTP/1.1\r\nhost: ${url.host}\r\naccept: text/event-stream\r\nauthorization: ${auth.authorization}\r\n\r\n`,
  );
  const chunks: Buffer[] = [];
  return {
    socket,
    read: () => socket.on('data', (c: Buffer) => chunks.push(c)).resume(),
    received: () => Buffer.concat(chunks).toString('utf8'),
  };
}

describe('a reader that does not read', () => {
  it('holds the relay at the page it is on: no further page is read until it reads again', async () => {
    // the one test of the file: its relay is its own
    const relay = await inProcessBusRelay();
    try {
      await stallAndResume(relay);
    } finally {
      await relay.close();
    }
  }, 90_000);
});

/** Fills bob's inbox past one page, stalls his stream, then reads it to the end. */
async function stallAndResume(relay: BusRelay): Promise<void> {
  const [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
  const text = 'x'.repeat(PLAINTEXT_CHARS);
  const envelopes = Array.from({ length: BACKLOG }, () => sealFor(alice, bob, text));
  for (let i = 0; i < envelopes.length; i += 4) {
    const res = await call(relay.url, 'POST', '/api/v1/messages', { envelopes: envelopes.slice(i, i + 4) }, alice.auth);
    expect(res.status).toBe(202);
  }

  // count bob's page reads (nothing else reads bob's inbox here)
  const messaging = relay.relay.context.messaging;
  const pending = messaging.pending.bind(messaging);
  let reads = 0;
  let answered = 0;
  const pageBytes: number[] = [];
  const pageEnvelopes: number[] = [];
  messaging.pending = async (agent: AgentRow, opts: Parameters<typeof pending>[1]) => {
    if (agent.agent_id === 'bob') reads++;
    const page = await pending(agent, opts);
    if (agent.agent_id === 'bob') {
      answered++;
      pageBytes.push(JSON.stringify(page.envelopes).length);
      pageEnvelopes.push(page.envelopes.length);
    }
    return page;
  };

  const stream = rawStream(relay.url, bob.auth);
  try {
    await until(() => answered >= 1, 20_000, 'the first page');
    // The kernel's socket buffers take a few pages before a write is refused; then reading
    // stops. Waited for as "no new read for a whole window", not a time the relay must meet.
    let seen = -1;
    await until(
      async () => {
        if (reads === seen) return true;
        seen = reads;
        await new Promise((r) => setTimeout(r, STALL_WINDOW_MS));
        return false;
      },
      60_000,
      'the stalled stream to stop reading',
    );
    const envelopesRead = pageEnvelopes.reduce((a, b) => a + b, 0);
    // (the kernel's buffers hold a few MB of them; the backlog is about 27 MB)
    expect(envelopesRead, 'envelopes read while the reader read nothing').toBeLessThan(BACKLOG);
    // each page is bounded in bytes: 1 MiB, plus the envelope that crossed it
    for (const bytes of pageBytes) expect(bytes).toBeLessThan(1024 * 1024 + MESSAGE_LIMITS.maxEnvelopeBytes + 10_000);

    // reading again: the rest of the page, then the next page, arrive
    stream.read();
    const count = () => stream.received().match(/^event: envelope$/gm)?.length ?? 0;
    await until(() => count() >= BACKLOG, 20_000, `all ${BACKLOG} envelopes`);
    expect(count()).toBe(BACKLOG);
    expect(reads).toBeGreaterThanOrEqual(2);
  } finally {
    stream.socket.destroy();
    messaging.pending = pending;
  }
}
