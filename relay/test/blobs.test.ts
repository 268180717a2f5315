/**
 * The attachment blob route on a relay with its real bus: who may upload, fetch and
 * acknowledge, acknowledgements arriving together, the size limit with or without a
 * declared length, and the answers to bad requests (always `{error, message}`, never a 5xx).
 */

import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { until } from '@svc/test-harness';
import type { TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TRANSFERS_PER_AGENT } from '../src/routes/blobs.js';

let relay: BusRelay;
let alice: TestAgent;
let bob: TestAgent;
let eve: TestAgent;
/** recipients of one blob who acknowledge it all at once */
let crowd: TestAgent[];
const LIMIT = 64 * 1024;

/** A raw request; `chunked` sends the body without a declared length. */
function send(
  method: string,
  path: string,
  auth: Record<string, string>,
  body?: Buffer,
  opts: { chunked?: boolean; type?: string } = {},
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${relay.url}${path}`, {
      method,
      headers: {
        ...auth,
        ...(body ? { 'content-type': opts.type ?? 'application/octet-stream' } : {}),
        ...(body && !opts.chunked ? { 'content-length': String(body.length) } : {}),
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    if (body && opts.chunked) {
      for (let i = 0; i < body.length; i += 8192) req.write(body.subarray(i, i + 8192));
      req.end();
    } else req.end(body);
  });
}
const json = (b: Buffer) => JSON.parse(b.toString('utf8')) as { error?: string; blob_id?: string; purged?: boolean };

beforeAll(async () => {
  relay = await inProcessBusRelay({ SVC_RELAY_BLOB_MAX_BYTES: String(LIMIT) });
  [alice, bob, eve] = await Promise.all([relay.enroll('alice'), relay.enroll('bob'), relay.enroll('eve')]);
  crowd = await Promise.all(['r1', 'r2', 'r3', 'r4', 'r5'].map((id) => relay.enroll(id)));
}, 60_000);

afterAll(async () => {
  await relay?.close();
});

describe('blobs', () => {
  it('upload for a recipient; the owner and the recipient fetch it, nobody else; the ack deletes it', async () => {
    const bytes = randomBytes(LIMIT - 1);
    const up = await send('POST', `/api/v1/blobs?for=${bob.number}`, alice.auth, bytes);
    expect(up.status).toBe(201);
    const id = json(up.body).blob_id as string;
    for (const who of [alice, bob]) {
      const got = await send('GET', `/api/v1/blobs/${id}`, who.auth);
      expect(got.status).toBe(200);
      expect(got.body.equals(bytes)).toBe(true);
    }
    const other = await send('GET', `/api/v1/blobs/${id}`, eve.auth);
    expect([other.status, json(other.body).error]).toEqual([404, 'unknown_blob']);
    // only a recipient acknowledges
    expect((await send('POST', `/api/v1/blobs/${id}/ack`, eve.auth)).status).toBe(404);
    expect((await send('POST', `/api/v1/blobs/${id}/ack`, alice.auth)).status).toBe(404);
    const ack = await send('POST', `/api/v1/blobs/${id}/ack`, bob.auth);
    expect([ack.status, json(ack.body).purged]).toEqual([200, true]);
    expect((await send('GET', `/api/v1/blobs/${id}`, alice.auth)).status).toBe(404);
  });

  it('recipients acknowledging at once are each counted: the last purges it', async () => {
    const to = crowd.map((r) => r.number).join(',');
    // on a record rewritten without a version check, concurrent acks overwrite each other
    // and none sees every recipient; several blobs make a lucky interleaving irrelevant
    for (let round = 0; round < 8; round++) {
      const up = await send('POST', `/api/v1/blobs?for=${to}`, alice.auth, randomBytes(1000));
      expect(up.status).toBe(201);
      const id = json(up.body).blob_id as string;
      const acks = await Promise.all(crowd.map((r) => send('POST', `/api/v1/blobs/${id}/ack`, r.auth)));
      expect(
        acks.map((a) => a.status),
        `round ${round}`,
      ).toEqual(crowd.map(() => 200));
      expect(acks.filter((a) => json(a.body).purged).length, `round ${round}: acks saying purged`).toBe(1);
      for (const who of [alice, crowd[0] as TestAgent]) {
        const got = await send('GET', `/api/v1/blobs/${id}`, who.auth);
        expect([got.status, json(got.body).error], `round ${round}`).toEqual([404, 'unknown_blob']);
      }
    }
  });

  it('an ack repeated before the others is counted once; the blob waits for the rest', async () => {
    const [first, second] = crowd as [TestAgent, TestAgent];
    const up = await send('POST', `/api/v1/blobs?for=${first.number},${second.number}`, alice.auth, randomBytes(10));
    const id = json(up.body).blob_id as string;
    const again = await Promise.all([1, 2, 3].map(() => send('POST', `/api/v1/blobs/${id}/ack`, first.auth)));
    expect(again.map((a) => [a.status, json(a.body).purged])).toEqual([1, 2, 3].map(() => [200, false]));
    expect((await send('GET', `/api/v1/blobs/${id}`, alice.auth)).status).toBe(200);
    const last = await send('POST', `/api/v1/blobs/${id}/ack`, second.auth);
    expect([last.status, json(last.body).purged]).toEqual([200, true]);
  });

  it('over the limit: 413 blob_too_large, declared or not', async () => {
    const big = randomBytes(LIMIT + 1);
    for (const chunked of [false, true]) {
      const r = await send('POST', `/api/v1/blobs?for=${bob.number}`, alice.auth, big, { chunked });
      expect([r.status, json(r.body).error], `chunked ${chunked}`).toEqual([413, 'blob_too_large']);
    }
    expect((await send('POST', `/api/v1/blobs?for=${bob.number}`, alice.auth, randomBytes(LIMIT))).status).toBe(201);
  });

  it(`at most ${TRANSFERS_PER_AGENT} transfers at once per agent (each holds a blob in memory): the next is 429, a slot comes back when one ends`, async () => {
    // uploads that send their headers and half their body, then stall; one that arrived while
    // a probe below held a slot was refused (429) and stalls again
    const stalled: ReturnType<typeof request>[] = [];
    let ended = false;
    const stall = (i: number): void => {
      if (ended) return; // the test has ended: a refusal arriving now starts nothing the relay would wait for
      const req = request(`${relay.url}/api/v1/blobs?for=${bob.number}`, {
        method: 'POST',
        headers: { ...eve.auth, 'content-type': 'application/octet-stream', 'content-length': String(LIMIT) },
      });
      req.on('error', () => undefined);
      req.on('response', (res) => {
        res.resume();
        // a refused upload's other half is never sent: its connection goes, or the relay
        // would hold it (the rest of the body is still to come) until its stop's grace ends
        if (res.statusCode === 429) req.destroy();
        if (res.statusCode === 429 && stalled[i] === req) stall(i);
      });
      req.write(randomBytes(LIMIT / 2));
      stalled[i] = req;
    };
    for (let i = 0; i < TRANSFERS_PER_AGENT; i++) stall(i);
    try {
      const over = await until(
        async () => {
          const r = await send('GET', `/api/v1/blobs/${'A'.repeat(22)}`, eve.auth);
          return r.status === 429 ? r : undefined;
        },
        10_000,
        'the stalled uploads to hold every slot',
      );
      expect(json(over.body).error).toBe('rate_limited');
      // another agent is not held back by eve's transfers
      expect((await send('POST', `/api/v1/blobs?for=${bob.number}`, alice.auth, randomBytes(16))).status).toBe(201);
      stalled.pop()?.destroy();
      const after = await until(
        async () => {
          const r = await send('POST', `/api/v1/blobs?for=${bob.number}`, eve.auth, randomBytes(16));
          return r.status === 201 ? r : undefined;
        },
        10_000,
        'a slot given back by the closed upload',
      );
      expect(json(after.body).blob_id).toEqual(expect.any(String));
    } finally {
      ended = true;
      for (const req of stalled) req.destroy();
    }
  });

  it('bad requests get a 4xx in the one shape', async () => {
    const cases: Array<[string, string, Record<string, string>, Buffer | undefined, { type?: string }?]> = [
      ['POST', `/api/v1/blobs?for=${bob.number}`, {}, randomBytes(10)],
      ['POST', '/api/v1/blobs', alice.auth, randomBytes(10)],
      ['POST', '/api/v1/blobs?for=../x', alice.auth, randomBytes(10)],
      ['POST', `/api/v1/blobs?for=${bob.number}&x=1`, alice.auth, randomBytes(10)],
      ['POST', `/api/v1/blobs?for=${bob.number}`, alice.auth, Buffer.from('{}'), { type: 'application/json' }],
      ['POST', `/api/v1/blobs?for=${bob.number}`, alice.auth, randomBytes(10), { type: 'text/plain' }],
      ['GET', '/api/v1/blobs/not-an-id', alice.auth, undefined],
      ['GET', `/api/v1/blobs/${'A'.repeat(22)}`, alice.auth, undefined],
      ['POST', `/api/v1/blobs/${'A'.repeat(22)}/ack`, bob.auth, undefined],
    ];
    for (const [method, path, auth, body, opts] of cases) {
      const r = await send(method, path, auth, body, opts);
      expect(r.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(r.status, `${method} ${path}`).toBeLessThan(500);
      expect(Object.keys(json(r.body)).sort()).toEqual(['error', 'message']);
    }
    // the wrong content type is told which one it takes
    const form = await send('POST', `/api/v1/blobs?for=${bob.number}`, alice.auth, randomBytes(10), {
      type: 'application/x-www-form-urlencoded',
    });
    expect({ status: form.status, ...json(form.body) }).toEqual({
      status: 415,
      error: 'unsupported_media_type',
      message: 'Send the attachment as application/octet-stream.',
    });
  });

  it('an empty attachment, declared or chunked: 400 validation_failed, nothing stored', async () => {
    for (const chunked of [false, true]) {
      const r = await send('POST', `/api/v1/blobs?for=${bob.number}`, alice.auth, Buffer.alloc(0), { chunked });
      expect({ status: r.status, ...json(r.body) }, `chunked ${chunked}`).toEqual({
        status: 400,
        error: 'validation_failed',
        message: 'The attachment is empty; an encrypted attachment never is.',
      });
    }
  });

  it('a recipient that is no agent of the tenant: 404 unknown_recipient, nothing stored', async () => {
    const r = await send('POST', `/api/v1/blobs?for=${bob.number},nobody-here`, alice.auth, randomBytes(10));
    expect({ status: r.status, error: json(r.body).error }).toEqual({ status: 404, error: 'unknown_recipient' });
    expect((json(r.body) as { message?: string }).message).toMatch(/nobody-here is not an agent of your tenant/);
  });
});
