/**
 * Every error answer has the one shape `{error, message}`: the router's own refusals
 * (a path that does not decode, a parameter over the length limit) and Node's HTTP parser's
 * (headers too large) included. A JSON body that is not valid UTF-8 is refused with 400,
 * never stored with its bad bytes replaced.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { call, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: BusRelay;
let alice: TestAgent;
let bob: TestAgent;

beforeAll(async () => {
  relay = await inProcessBusRelay();
  [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
}, 60_000);

afterAll(async () => {
  await relay?.close();
});

/** A raw HTTP exchange, so nothing on our side rewrites the path, headers or body bytes. */
function raw(
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: Buffer } = {},
): Promise<{ status: number; body: unknown }> {
  const { port } = new URL(relay.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // returned as text
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Writes `text` on a new connection to `url` and gives back all the server wrote until it closed. */
function exchange(url: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(url).port), '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.on('data', (c: Buffer) => {
      got += c;
    });
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

const shape = { error: expect.any(String), message: expect.any(String) };

describe('router and parser refusals have the one shape', () => {
  it('a path segment that does not decode: 400 bad_request, saying so', async () => {
    const res = await raw('GET', '/api/v1/agents/%E0%A4', { headers: alice.auth });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'bad_request', message: expect.stringMatching(/percent-encoding/) });
  });

  it('a method the path is not served with: 405 method_not_allowed, with Allow', async () => {
    const { port } = new URL(relay.url);
    const answer = await new Promise<{ status: number; allow: string; body: unknown }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'PUT', path: '/api/v1/agents/me', headers: alice.auth });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, allow: String(res.headers.allow), body: JSON.parse(text) }),
        );
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(405);
    expect(answer.body).toEqual({ error: 'method_not_allowed', message: expect.stringMatching(/PUT is not allowed/) });
    expect(answer.allow.split(', ')).toEqual(expect.arrayContaining(['GET', 'PATCH']));
    // a path no route serves stays a 404
    expect((await raw('PUT', '/api/v1/nowhere', { headers: alice.auth })).status).toBe(404);
  });

  it('a request line Node cannot parse: 400 bad_request that says HTTP is at fault', async () => {
    const text = await exchange(relay.url, 'GET /healthz FOO/1.1\r\n\r\n');
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toEqual({
      error: 'bad_request',
      message: expect.stringMatching(/not valid HTTP/),
    });
  });

  it('HEAD of the event stream: 405, and no stream slot held', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await raw('HEAD', '/api/v1/messages/stream', { headers: alice.auth });
      expect(res.status).toBe(405);
    }
    // (a HEAD used to open a stream and hold its slot: 8 of them refused the next GET)
    const stream = await new Promise<number>((resolve) => {
      const { port } = new URL(relay.url);
      const req = request({ host: '127.0.0.1', port, path: '/api/v1/messages/stream', headers: alice.auth }, (res) => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', () => undefined);
      req.end();
    });
    expect(stream).toBe(200);
  });

  it('path values in messages are quoted, so a message stays on one line', async () => {
    const ack = await raw('POST', '/api/v1/messages/a%0D%0AX-Injected:%201/ack', { headers: alice.auth });
    expect(ack).toEqual({
      status: 404,
      body: { error: 'unknown_message', message: 'no message "a\\r\\nX-Injected: 1" addressed to you' },
    });
    const keys = await raw('GET', '/api/v1/agents/a%0Ab/keys', { headers: alice.auth });
    expect(keys).toEqual({
      status: 404,
      body: { error: 'not_found', message: 'No active agent "a\\nb" in this tenant.' },
    });
  });

  it('a parameter over the length limit: 414 uri_too_long', async () => {
    const res = await raw('GET', `/api/v1/agents/${'a'.repeat(1100)}`, { headers: alice.auth });
    expect(res.status).toBe(414);
    expect(res.body).toEqual({ error: 'uri_too_long', message: expect.any(String) });
  });

  it('headers over the limit: 431 headers_too_large', async () => {
    const res = await raw('GET', '/healthz', { headers: { 'x-big': 'b'.repeat(20_000) } });
    expect(res.status).toBe(431);
    expect(res.body).toEqual({ error: 'headers_too_large', message: expect.any(String) });
  });

  it("the router's refusals carry the request id like every other answer", async () => {
    for (const path of [`/api/v1/agents/${'a'.repeat(1100)}`, '/api/v1/agents/%E0%A4']) {
      const answer = await exchange(relay.url, `GET ${path} HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 4(00|14) /);
      expect(answer).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
    }
  });

  it('an HTTP/1.1 request without Host: 400 bad_request saying so (Node answered an empty 400)', async () => {
    const answer = await exchange(relay.url, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/\r\nx-request-id: /i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: 'bad_request',
      message: 'An HTTP/1.1 request must carry a Host header.',
    });
    // HTTP/1.0 has no Host to require
    expect(await exchange(relay.url, 'GET /healthz HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('an Expect other than 100-continue: 400 bad_request naming it (Node answered an empty 417)', async () => {
    const json = { ...alice.auth, 'content-type': 'application/json' };
    const res = await raw('PATCH', '/api/v1/agents/me', {
      headers: { ...json, expect: 'bogus' },
      body: Buffer.from('{"status_text":"expect"}'),
    });
    expect(res).toEqual({
      status: 400,
      body: { error: 'bad_request', message: 'Expect: "bogus" is not supported; only 100-continue is.' },
    });
    // 100-continue is served as before
    const ok = await raw('PATCH', '/api/v1/agents/me', {
      headers: { ...json, expect: '100-continue' },
      body: Buffer.from('{"status_text":"continued"}'),
    });
    expect(ok.status).toBe(200);
    expect((ok.body as { status_text: string }).status_text).toBe('continued');
  });

  it('a compressed body: 415 unsupported_media_type, nothing read as plain bytes or stored', async () => {
    const gz = gzipSync('{"status_text":"compressed"}');
    const res = await raw('PATCH', '/api/v1/agents/me', {
      headers: { ...alice.auth, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gz,
    });
    expect(res).toEqual({
      status: 415,
      body: {
        error: 'unsupported_media_type',
        message: 'Content-Encoding "gzip" is not supported; send the body uncompressed.',
      },
    });
    // an encoding nobody knows was taken as none, and the body stored
    const bogus = await raw('PATCH', '/api/v1/agents/me', {
      headers: { ...alice.auth, 'content-type': 'application/json', 'content-encoding': 'bogus' },
      body: Buffer.from('{"status_text":"bogus"}'),
    });
    expect(bogus.status).toBe(415);
    // an attachment's bytes would have been stored compressed, which no recipient can open
    const blob = await raw('POST', `/api/v1/blobs?for=${bob.number}`, {
      headers: { ...alice.auth, 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' },
      body: gz,
    });
    expect(blob.status).toBe(415);
    const me = await call<{ status_text: string | null }>(relay.url, 'GET', '/api/v1/agents/me', undefined, alice.auth);
    expect(me.body.status_text).not.toMatch(/compressed|bogus/);
    // identity is no encoding at all
    const plain = await raw('PATCH', '/api/v1/agents/me', {
      headers: { ...alice.auth, 'content-type': 'application/json', 'content-encoding': 'identity' },
      body: Buffer.from('{"status_text":"plain"}'),
    });
    expect(plain.status).toBe(200);
  });

  it('CONNECT: 405 method_not_allowed, then the connection closes (it was closed without an answer)', async () => {
    const answer = await exchange(relay.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 405 /);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: 'method_not_allowed',
      message: expect.stringMatching(/CONNECT/),
    });
    expect((await raw('GET', '/healthz')).status).toBe(200);
  });

  it('an unknown route: 404 not_found', async () => {
    const res = await raw('GET', '/nowhere');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject(shape);
  });

  it('a body Fastify would refuse on a path or method nothing serves: still 404 or 405, not 400 or 415', async () => {
    // QUERY is a method with a body to Fastify: without a content type it answered 400
    const noType = await raw('QUERY', '/healthz');
    expect(noType.status).toBe(405);
    expect(noType.body).toEqual({
      error: 'method_not_allowed',
      message: 'QUERY is not allowed on /healthz; use GET or HEAD.',
    });
    // a type no parser takes answered 415
    const text = { headers: { 'content-type': 'application/xml' }, body: Buffer.from('<hello/>') };
    expect(await raw('POST', '/healthz', text)).toEqual({
      status: 405,
      body: expect.objectContaining({ error: 'method_not_allowed' }),
    });
    expect(await raw('POST', '/nowhere', text)).toEqual({
      status: 404,
      body: { error: 'not_found', message: 'No route POST /nowhere.' },
    });
    // on a route that takes the method, the body is still at fault
    expect(
      (await raw('POST', '/api/v1/messages', { ...text, headers: { ...text.headers, ...alice.auth } })).status,
    ).toBe(415);
  });
});

describe('a body that may be left out', () => {
  it('a heartbeat with no body, or an empty JSON one, is a heartbeat (200)', async () => {
    for (const headers of [alice.auth, { ...alice.auth, 'content-type': 'application/json' }]) {
      const res = await raw('POST', '/api/v1/agents/me/heartbeat', { headers, body: Buffer.alloc(0) });
      expect(res.status, JSON.stringify(headers)).toBe(200);
    }
    // elsewhere an empty JSON body is still not JSON
    const other = await raw('PATCH', '/api/v1/agents/me', {
      headers: { ...alice.auth, 'content-type': 'application/json' },
      body: Buffer.alloc(0),
    });
    expect(other.status).toBe(400);
  });

  it('the OpenAPI says so, and only there', async () => {
    const doc = (
      await call<{ paths: Record<string, Record<string, { requestBody?: { required?: boolean } }>> }>(
        relay.url,
        'GET',
        '/api/v1/openapi.json',
      )
    ).body;
    expect(doc.paths['/api/v1/agents/me/heartbeat']?.post?.requestBody?.required).toBe(false);
    expect(doc.paths['/api/v1/nats/issue-leaf-creds']?.post?.requestBody?.required).toBe(false);
    expect(doc.paths['/api/v1/messages']?.post?.requestBody?.required).toBe(true);
  });
});

describe('invalid UTF-8 in a JSON body', () => {
  const json = { 'content-type': 'application/json' };

  it('is refused with 400 on an ordinary route, and nothing is stored', async () => {
    const body = Buffer.concat([Buffer.from('{"display_name":"bad '), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const res = await raw('PATCH', '/api/v1/agents/me', { headers: { ...alice.auth, ...json }, body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_json', message: expect.stringMatching(/UTF-8/) });
    const me = await call<{ display_name: string | null }>(
      relay.url,
      'GET',
      '/api/v1/agents/me',
      undefined,
      alice.auth,
    );
    expect(me.body.display_name ?? '').not.toMatch(/bad/);
  });

  it('a "__proto__" or "constructor" key: 400 invalid_json saying why (the body is JSON), nothing stored', async () => {
    for (const key of ['__proto__', 'constructor']) {
      const body = Buffer.from(`{"status_text":"poisoned","${key}":{"prototype":{"x":1},"x":1}}`);
      const res = await raw('PATCH', '/api/v1/agents/me', { headers: { ...alice.auth, ...json }, body });
      expect(res, key).toEqual({
        status: 400,
        body: {
          error: 'invalid_json',
          message: 'The request body holds a "__proto__" or "constructor" key, which the relay refuses.',
        },
      });
    }
    // JSON that is not JSON still says so
    const broken = await raw('PATCH', '/api/v1/agents/me', {
      headers: { ...alice.auth, ...json },
      body: Buffer.from('{"a":'),
    });
    expect(broken.body).toEqual({ error: 'invalid_json', message: 'The request body is not valid JSON.' });
    const me = await call<{ status_text: string | null }>(relay.url, 'GET', '/api/v1/agents/me', undefined, alice.auth);
    expect(me.body.status_text ?? '').not.toBe('poisoned');
  });

  it('valid UTF-8 (not ASCII) is taken as it is', async () => {
    const res = await raw('PATCH', '/api/v1/agents/me', {
      headers: { ...alice.auth, ...json },
      body: Buffer.from('{"display_name":"Zoë ✓"}', 'utf8'),
    });
    expect(res.status).toBe(200);
    expect((res.body as { display_name: string }).display_name).toBe('Zoë ✓');
  });

  it('is refused with 400 on the send route (which parses its body itself)', async () => {
    const text = JSON.stringify({ envelopes: [sealFor(alice, bob, 'hi')] });
    // a stray byte after the canonical body takes it off the fast path, onto the general one
    const body = Buffer.concat([
      Buffer.from(text.slice(0, -1)),
      Buffer.from(',"x":"'),
      Buffer.from([0xc3]),
      Buffer.from('"}'),
    ]);
    const res = await raw('POST', '/api/v1/messages', { headers: { ...alice.auth, ...json }, body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_json', message: expect.stringMatching(/UTF-8/) });
  });
});

describe('a request that stalls on its way in', () => {
  it('is answered 408 request_timeout and its connection closed (it was held for ever)', async () => {
    const slow = await inProcessBusRelay({}, { requestTimeoutMs: 500 });
    try {
      const started = Date.now();
      // no credentials needed: the enrollment route reads a body first
      const text = await exchange(
        slow.url,
        'POST /api/v1/enrollment HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":',
      );
      expect(text).toMatch(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: 'request_timeout' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    } finally {
      await slow.close();
    }
  });
});

describe('a request the schemas refuse', () => {
  it('is answered 400 validation_failed naming the field and where it is, in words', async () => {
    const send = (body: unknown) => call(relay.url, 'POST', '/api/v1/messages', body, alice.auth);
    expect(await send({ envelopes: [sealFor(alice, bob, 'hi')], bogus: 1 })).toMatchObject({
      status: 400,
      body: {
        error: 'validation_failed',
        message: 'invalid request: the body has bogus, which is not a field it takes',
      },
    });
    expect(await send({})).toMatchObject({
      status: 400,
      body: { error: 'validation_failed', message: 'invalid request: the body lacks envelopes, which is required' },
    });
    expect(await call(relay.url, 'GET', '/api/v1/messages/pending?limit=abc', undefined, alice.auth)).toMatchObject({
      status: 400,
      body: {
        error: 'validation_failed',
        message: expect.stringMatching(/^invalid request: limit in the query must match pattern "/),
      },
    });
  });
});
