/**
 * A bounded fuzz of every route in the generated OpenAPI document (plus the health and
 * well-known routes): random path parameters, query strings, bodies (JSON of every type,
 * near-valid objects with wrong, missing and extra fields, bytes that are not JSON or not
 * UTF-8), content types and credentials (none, bogus, a real agent's). The relay must never
 * answer 5xx, and every 4xx must be exactly `{error, message}` with a catalogued code.
 *
 * The random source is seeded, so a failure repeats; the property holds for any draw. No
 * string drawn contains "//", so no webhook URL that could leave this machine is ever set.
 */
import { ERROR_CATALOG } from '@svc/shared';
import { sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const PER_ROUTE = 40;

let relay: BusRelay;
let alice: TestAgent;
let bob: TestAgent;

beforeAll(async () => {
  relay = await inProcessBusRelay({
    // the fuzz goes deeper than the limits would let it; limits are tested on their own
    SVC_RELAY_AUTH_RATE_PER_ADDRESS: '0',
    SVC_RELAY_AUTH_RATE_PER_AGENT: '0',
    SVC_RELAY_SEND_RATE_PER_AGENT: '0',
  });
  [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
}, 60_000);

afterAll(async () => {
  await relay?.close();
});

/** mulberry32: small, seeded, good enough to pick cases. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function fuzzer(seed: number) {
  const r = rng(seed);
  const int = (n: number) => Math.floor(r() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const strings = [
    '',
    ' ',
    'a',
    'alice',
    'bob',
    'me',
    '0',
    '-1',
    '1e400',
    'null',
    'true',
    '💥',
    'Zoë',
    '\u0000',
    '\ud800',
    '..',
    '%',
    '%00',
    '<script>',
    "' OR 1=1 --",
    'svc_ak_x',
    'chl_x',
    '01970000-0000-7000-8000-000000000000',
    'A'.repeat(43),
    'x'.repeat(5000),
  ];
  const str = (): string => {
    if (r() < 0.6) return pick(strings);
    const alphabet = 'abcXYZ019_-.:@ %\u00e9\u2603';
    return Array.from({ length: int(40) }, () => alphabet[int(alphabet.length)]).join('');
  };
  const value = (depth = 0): Json => {
    switch (int(depth > 2 ? 5 : 7)) {
      case 0:
        return null;
      case 1:
        return r() < 0.5;
      case 2:
        return pick([0, -1, 1.5, 2 ** 53, -(2 ** 31), 1e308, 3600]);
      case 3:
      case 4:
        return str();
      case 5:
        return Array.from({ length: int(4) }, () => value(depth + 1));
      default:
        return Object.fromEntries(Array.from({ length: int(4) }, () => [str(), value(depth + 1)]));
    }
  };
  return { r, int, pick, str, value };
}

/** Near-valid bodies: a field set taken from the real requests, with fields dropped, retyped or added. */
function bodyFor(f: ReturnType<typeof fuzzer>): unknown {
  const samples: Array<Record<string, Json>> = [
    { endpoint_url: null, display_name: 'x', timezone: 'Europe/Paris', status_text: 's' },
    { deployment_id: relay.relay.context.deployment.deploymentId, tenant_id: 'default', agent_id: 'alice' },
    { challenge_id: 'chl_x', agent_id: 'alice', signature: 'A'.repeat(86) },
    {
      enrollment_code: 'svce1.x.y',
      signing_public_key: 'A'.repeat(43),
      encryption_public_key: 'A'.repeat(43),
      issued_at: '2025-01-01T00:00:00Z',
      proof: 'A'.repeat(86),
    },
    { agent_number: 'bob', alias: 'b', notes: 'n' },
    { reason: 'ten characters at least' },
    {
      version: 2,
      signing_public_key: 'A'.repeat(43),
      encryption_public_key: 'A'.repeat(43),
      created_at: '2025-01-01T00:00:00Z',
      signature: 'A'.repeat(86),
    },
    { envelopes: [JSON.parse(JSON.stringify(sealFor(alice, bob, 'fuzz'))) as Json] },
  ];
  const base: Record<string, Json> = { ...f.pick(samples) };
  for (const k of Object.keys(base)) {
    const roll = f.r();
    if (roll < 0.2) delete base[k];
    else if (roll < 0.45) base[k] = f.value();
  }
  if (f.r() < 0.3) base[f.str()] = f.value();
  if (f.r() < 0.15) return f.value();
  return base;
}

function payloadFor(f: ReturnType<typeof fuzzer>): { body?: string | Buffer; type?: string } {
  switch (f.int(8)) {
    case 0:
      return {};
    case 1:
      return { body: '{"unterminated', type: 'application/json' };
    case 2:
      return {
        body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
        type: 'application/json',
      };
    case 3:
      return { body: 'a=b', type: f.pick(['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) };
    case 4:
      return { body: '', type: 'application/json' };
    default:
      return {
        body: JSON.stringify(bodyFor(f)),
        type: f.pick(['application/json', 'application/json; charset=utf-8']),
      };
  }
}

/** Every byte percent-encoded (a lone surrogate goes in as U+FFFD, as a client would send it). */
const enc = (v: string): string =>
  [...Buffer.from(v, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

function pathFor(template: string, f: ReturnType<typeof fuzzer>): string {
  return template.replace(/\{[^}]+\}/g, () => {
    const v = f.pick(['alice', 'bob', 'nobody', '1', '0', '-3', '99999999999999999999', f.str()]);
    return f.r() < 0.15 ? f.pick(['%E0%A4', '%zz', '..%2F..', 'a'.repeat(400)]) : enc(v);
  });
}

function queryFor(params: string[], f: ReturnType<typeof fuzzer>, authed: boolean): string {
  const parts: string[] = [];
  for (const name of params) {
    if (f.r() < 0.4) continue;
    // a valid wait would hold a long-poll open: only invalid ones or 0
    const v =
      name === 'wait' && authed
        ? f.pick(['0', 'x', '-1', '31', '1.5', ''])
        : f.pick(['0', '1', '-1', 'x', '', '1e3', '100000', f.str()]);
    parts.push(`${name}=${enc(v)}`);
  }
  if (f.r() < 0.2) parts.push(`${enc(f.str())}=${enc(f.str())}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

interface Operation {
  method: string;
  path: string;
  query: string[];
}

async function operations(): Promise<Operation[]> {
  const doc = (await relay.relay.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as {
    paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>>;
  };
  const ops: Operation[] = [];
  for (const [path, byMethod] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(byMethod)) {
      ops.push({
        method: method.toUpperCase(),
        path,
        query: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
      });
    }
  }
  for (const path of ['/healthz', '/readyz', '/.well-known/svc-deployment', '/api/v1/openapi.json']) {
    ops.push({ method: 'GET', path, query: [] });
  }
  return ops;
}

function checkAnswer(op: string, res: LightMyRequestResponse): void {
  expect(res.statusCode, `${op} → ${res.statusCode} ${res.body.slice(0, 300)}`).toBeLessThan(500);
  if (res.statusCode < 400) return;
  let body: unknown;
  try {
    body = res.json();
  } catch {
    body = res.body;
  }
  expect(body, op).toEqual({ error: expect.any(String), message: expect.any(String) });
  expect(
    Object.hasOwn(ERROR_CATALOG, (body as { error: string }).error),
    `${op}: ${(body as { error: string }).error}`,
  ).toBe(true);
  expect(ERROR_CATALOG[(body as { error: keyof typeof ERROR_CATALOG }).error].status, op).toBe(res.statusCode);
}

describe('every route, fuzzed', () => {
  it('the document lists the API, the messaging routes included', async () => {
    const ops = await operations();
    const names = ops.map((o) => `${o.method} ${o.path}`);
    expect(names).toEqual(
      expect.arrayContaining([
        'POST /api/v1/messages',
        'POST /api/v1/auth/sign-in/challenge',
        'PATCH /api/v1/agents/me',
      ]),
    );
  });

  // every route, in three shares of the list (each a test of its own, ~2,000 requests in all)
  it.each([0, 1, 2])(
    `never answers 5xx; every 4xx is {error, message} (${PER_ROUTE} requests a route, share %i)`,
    async (share) => {
      const ops = await operations();
      const mine = [...ops.entries()].filter(([i]) => i % 3 === share);
      expect(mine.length).toBeGreaterThan(0);
      let sent = 0;
      for (const [i, op] of mine) {
        const f = fuzzer(0x5eed + i);
        for (let n = 0; n < PER_ROUTE; n++) {
          const auth = f.pick(['none', 'bogus', 'key', 'agent', 'agent', 'agent'] as const);
          // the event stream stays open for a real agent: it is fuzzed without one
          const authed = auth === 'agent' && !op.path.endsWith('/stream');
          const headers: Record<string, string> = {};
          if (authed) headers.authorization = alice.auth.authorization as string;
          else if (auth === 'bogus')
            headers.authorization = f.pick(['Bearer x', 'Basic abc', 'Bearer ', 'Bearer a.b.c']);
          else if (auth === 'key') headers.authorization = `Bearer ${alice.apiKey}`;
          const { body, type } = payloadFor(f);
          if (type) headers['content-type'] = type;
          const url = `${pathFor(op.path, f)}${queryFor(op.query, f, authed)}`;
          const res = await relay.relay.app.inject({
            method: op.method as 'GET',
            url,
            headers,
            ...(body === undefined || op.method === 'GET' ? {} : { payload: body }),
          });
          checkAnswer(`${op.method} ${url}`, res);
          sent++;
        }
      }
      expect(sent).toBe(mine.length * PER_ROUTE);
    },
    120_000,
  );
});
