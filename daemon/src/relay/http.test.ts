import { createServer, globalAgent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '@svc/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ERROR_ANSWER_BYTES, MAX_RELAY_ANSWER_BYTES, openRequest, readBody, relayRequest } from './http.js';

/** A relay stand-in whose answers are as long as a test asks. */
let server: Server;
let baseUrl: string;
let silentRequests = 0;
let answerLate: (() => void) | undefined;
beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const size = Number(url.searchParams.get('size'));
    if (url.pathname === '/declared') {
      // declares more than the limit; sends nothing
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(size) });
      res.flushHeaders();
      return;
    }
    if (url.pathname === '/silent') {
      // takes the request and never answers
      silentRequests++;
      return;
    }
    if (url.pathname === '/headers-only') {
      // the head of an answer, and its body never
      silentRequests++;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.flushHeaders();
      return;
    }
    if (url.pathname === '/late') {
      // answers once told to
      silentRequests++;
      answerLate = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"late":true}');
      };
      return;
    }
    if (url.pathname === '/endless') {
      // chunked, never ends on its own: the reader must stop it
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      const pump = () => {
        while (res.write(chunk)) {
          if (res.destroyed) return;
        }
        res.once('drain', pump);
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ text: 'x'.repeat(size) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('relay answers are bounded', () => {
  const max = 64 * 1024;

  it('reads an answer within the limit', async () => {
    const res = await relayRequest<{ text: string }>(
      { baseUrl },
      { method: 'GET', path: '/ok?size=1000', maxBytes: max },
    );
    expect(res.body.text).toHaveLength(1000);
  });

  it('refuses an answer that declares more, or streams more, than the limit', async () => {
    for (const path of [`/declared?size=${max + 1}`, '/endless', `/ok?size=${max}`]) {
      await expect(relayRequest({ baseUrl }, { method: 'GET', path, maxBytes: max }), path).rejects.toMatchObject({
        code: 'relay_answer_too_large',
        status: 502,
      });
    }
  });

  it("an error answer to the stream request is read up to 64 KiB (the stream's own error path)", async () => {
    const res = await openRequest({ baseUrl }, { method: 'GET', path: '/endless' });
    await expect(readBody(res, MAX_ERROR_ANSWER_BYTES)).rejects.toMatchObject({ code: 'relay_answer_too_large' });
    const small = await openRequest({ baseUrl }, { method: 'GET', path: '/ok?size=10' });
    expect(await readBody(small, MAX_ERROR_ANSWER_BYTES)).toEqual({ text: 'x'.repeat(10) });
  });

  it('the default limit holds a full pending page (100 envelopes of 256 KiB) and no more than 1 MiB beside', () => {
    expect(MAX_RELAY_ANSWER_BYTES).toBe(100 * 256 * 1024 + 1024 * 1024);
  });
});

describe("a target's stop signal", () => {
  it('cuts short a call in flight, with a message that says why, and any call made after it', async () => {
    const stop = new AbortController();
    const target = { baseUrl, stopped: stop.signal };
    const before = silentRequests;
    const call = relayRequest(target, { method: 'GET', path: '/silent' });
    const failed = expect(call).rejects.toMatchObject({
      code: 'relay_unreachable',
      message: expect.stringMatching(/was cut short: the agent's session stopped/),
    });
    await until(async () => silentRequests > before, 5_000, 'the server has the request');
    stop.abort();
    await failed;
    // a call made once stopped fails the same way (with a signal of its own too)
    await expect(
      relayRequest(target, { method: 'GET', path: '/silent', signal: new AbortController().signal }),
    ).rejects.toMatchObject({ code: 'relay_unreachable', message: expect.stringMatching(/cut short/) });
  });

  it('cuts short a call whose answer has begun, while its body is read, with the same message', async () => {
    const stop = new AbortController();
    const before = silentRequests;
    const call = relayRequest({ baseUrl, stopped: stop.signal }, { method: 'GET', path: '/headers-only' });
    const failed = expect(call).rejects.toMatchObject({
      code: 'relay_unreachable',
      message: expect.stringMatching(/was cut short: the agent's session stopped/),
    });
    await until(async () => silentRequests > before, 5_000, 'the server has the request');
    // the head has left the server; give the client a moment to have it before the stop
    await new Promise((r) => setTimeout(r, 100));
    stop.abort();
    await failed;
  });

  it('leaves a whole call (a change the relay makes that must be recorded here) to its answer', async () => {
    const stop = new AbortController();
    const before = silentRequests;
    const call = relayRequest({ baseUrl, stopped: stop.signal }, { method: 'GET', path: '/late', whole: true });
    await until(async () => silentRequests > before, 5_000, 'the server has the request');
    stop.abort();
    answerLate?.();
    expect((await call).body).toEqual({ late: true });
  });
});

describe('a kept-alive connection the server closes as idle', () => {
  // A server that answers one request per connection: a second one on it is reset unread,
  // as when the server closes an idle connection just as the client reuses it.
  let closing: Server;
  let url: string;
  const seen: string[] = [];
  const served = new WeakSet<object>();
  beforeAll(async () => {
    closing = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      if (served.has(req.socket) || req.url === '/reset') {
        req.socket.destroy();
        return;
      }
      served.add(req.socket);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true }));
    });
    await new Promise<void>((r) => closing.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(closing.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    closing.closeAllConnections();
    await new Promise<void>((r) => closing.close(() => r()));
  });

  it('has a request reset there sent once more, on a new connection', async () => {
    await relayRequest({ baseUrl: url }, { method: 'GET', path: '/first' });
    seen.length = 0;
    const res = await relayRequest({ baseUrl: url }, { method: 'POST', path: '/second', body: { n: 1 } });
    expect(res.body).toEqual({ ok: true });
    expect(seen).toEqual(['POST /second', 'POST /second']);
  });

  it('not a request reset on a new connection, nor a body sent in pieces with progress', async () => {
    // no kept-alive connection left to reuse: the next request opens one
    closing.closeIdleConnections();
    const key = `${new URL(url).host}:`;
    await until(() => Object.keys(globalAgent.freeSockets).every((k) => !k.startsWith(key)), 5_000, 'no idle socket');
    seen.length = 0;
    await expect(relayRequest({ baseUrl: url }, { method: 'GET', path: '/reset' })).rejects.toMatchObject({
      code: 'relay_unreachable',
    });
    expect(seen).toEqual(['GET /reset']);
    await relayRequest({ baseUrl: url }, { method: 'GET', path: '/first' });
    seen.length = 0;
    const progress: number[] = [];
    await expect(
      relayRequest(
        { baseUrl: url },
        { method: 'POST', path: '/upload', raw: new Uint8Array(1024), onProgress: (done) => progress.push(done) },
      ),
    ).rejects.toMatchObject({ code: 'relay_unreachable' });
    expect(seen).toEqual(['POST /upload']);
    expect(progress).toEqual([1024]);
  });
});
