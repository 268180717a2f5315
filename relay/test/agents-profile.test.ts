/** Agent profile routes in-process: GET/PATCH /agents/me, the webhook secret lifecycle, heartbeat, public profiles. */
import { createHmac } from 'node:crypto';
import type { InProcessRelay } from '@svc/test-harness/in-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEndpointUrl } from '../src/services/endpoint-url.js';
import { type TwoTenants, twoTenants } from './helpers/two-tenants.js';

let relay: InProcessRelay;
let enrollAgent: TwoTenants['enroll'];
const api = (...args: Parameters<InProcessRelay['api']>) => relay.api(...args);

let alice: string;
let bob: string;
let eve: string;

beforeAll(async () => {
  ({ relay, enroll: enrollAgent, alice, bob, eve } = await twoTenants());
});
afterAll(async () => {
  await relay.close();
});

describe('GET /api/v1/agents/me', () => {
  it('shows the full own profile with defaults', async () => {
    const res = await api(alice, 'GET', '/api/v1/agents/me');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      agent_id: 'alice',
      agent_number: 'alice',
      tenant_id: 'acme',
      deployment_id: relay.ctx.deployment.deploymentId,
      capabilities: ['http-relay'],
      display_name: 'Agent alice',
      description: null,
      discoverable: true,
      presence: 'offline',
      status: null,
      status_text: null,
      location: null,
      timezone: null,
      visibility: 'org',
      last_seen_at: null,
      endpoint_url: null,
      webhook_secret_set: false,
      enrolled_at: expect.any(String),
    });
  });

  it('needs an access token', async () => {
    const res = await relay.app.inject({ method: 'GET', url: '/api/v1/agents/me' });
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toBe('missing_token');
    const bad = await api('nonsense', 'GET', '/api/v1/agents/me');
    expect(bad.statusCode).toBe(401);
  });
});

describe('PATCH /api/v1/agents/me', () => {
  it('updates any subset of the fields, trims text, clears with null or empty, and keeps the rest', async () => {
    const res = await api(alice, 'PATCH', '/api/v1/agents/me', {
      display_name: '  Alice  ',
      description: 'Does things',
      discoverable: false,
      status: 'busy',
      status_text: 'in a meeting',
      location: 'Paris',
      timezone: 'europe/paris',
      visibility: 'private',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      display_name: 'Alice',
      description: 'Does things',
      discoverable: false,
      status: 'busy',
      status_text: 'in a meeting',
      location: 'Paris',
      timezone: 'Europe/Paris',
      visibility: 'private',
      webhook_secret_set: false,
    });
    expect(res.json()).not.toHaveProperty('webhook_secret');

    const partial = await api(alice, 'PATCH', '/api/v1/agents/me', { status_text: '', location: null });
    expect(partial.json()).toMatchObject({ status: 'busy', status_text: null, location: null, display_name: 'Alice' });

    const empty = await api(alice, 'PATCH', '/api/v1/agents/me', {});
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toMatchObject({ status: 'busy', timezone: 'Europe/Paris', visibility: 'private' });

    const read = await api(alice, 'GET', '/api/v1/agents/me');
    expect(read.json()).toMatchObject({ display_name: 'Alice', discoverable: false, visibility: 'private' });
  });

  it('validates the time zone as an IANA name', async () => {
    for (const tz of ['UTC', 'America/New_York', 'Etc/GMT+5', 'Asia/Kolkata']) {
      const ok = await api(alice, 'PATCH', '/api/v1/agents/me', { timezone: tz });
      expect(ok.statusCode, tz).toBe(200);
      expect(ok.json().timezone, tz).toEqual(expect.any(String));
    }
    for (const tz of ['Mars/Olympus_Mons', '+01:00', 'UTC+1', 'Europe/', '../etc/passwd', 'x'.repeat(65)]) {
      const bad = await api(alice, 'PATCH', '/api/v1/agents/me', { timezone: tz });
      expect(bad.statusCode, tz).toBe(400);
      expect(bad.json().error, tz).toBe(tz.length > 64 ? 'validation_failed' : 'invalid_timezone');
    }
    const cleared = await api(alice, 'PATCH', '/api/v1/agents/me', { timezone: null });
    expect(cleared.json().timezone).toBeNull();
  });

  it('refuses wrong types, unknown fields, bad JSON and an unknown visibility with 400 and a code', async () => {
    const cases: unknown[] = [
      { discoverable: 'yes' },
      { display_name: 42 },
      { visibility: 'everyone' },
      { webhook_secret: 'ab'.repeat(32) },
      { display_name: 'x'.repeat(201) },
      { endpoint_url: 5 },
      [],
    ];
    for (const body of cases) {
      const res = await api(alice, 'PATCH', '/api/v1/agents/me', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error, JSON.stringify(body)).toBe('validation_failed');
    }
    const badJson = await relay.app.inject({
      method: 'PATCH',
      url: '/api/v1/agents/me',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      payload: '{"display_name":',
    });
    expect(badJson.statusCode).toBe(400);
    expect(badJson.json().error).toBe('invalid_json');
    const jsonNull = await relay.app.inject({
      method: 'PATCH',
      url: '/api/v1/agents/me',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      payload: 'null',
    });
    expect(jsonNull.statusCode).toBe(400);
    expect(jsonNull.json().error).toBe('validation_failed');
    const noBody = await api(alice, 'PATCH', '/api/v1/agents/me');
    expect(noBody.statusCode).toBe(400);
    // nothing of the refused bodies was stored
    expect((await api(alice, 'GET', '/api/v1/agents/me')).json().visibility).toBe('private');
  });
});

describe('webhook secret lifecycle', () => {
  const generated: string[] = [];
  const secretOf = (body: { webhook_secret?: string }) => {
    if (body.webhook_secret) generated.push(body.webhook_secret);
    return body.webhook_secret;
  };

  it('first endpoint → new secret once; URL change keeps it; null/blank clears; next URL → new secret', async () => {
    const first = await api(bob, 'PATCH', '/api/v1/agents/me', { endpoint_url: 'https://hooks.example.com/svc' });
    expect(first.statusCode, first.body).toBe(200);
    const secret1 = secretOf(first.json());
    expect(secret1).toMatch(/^[0-9a-f]{64}$/);
    expect(first.json()).toMatchObject({ endpoint_url: 'https://hooks.example.com/svc', webhook_secret_set: true });

    // later reads show it as set, never the value
    const read = await api(bob, 'GET', '/api/v1/agents/me');
    expect(read.json()).toMatchObject({ endpoint_url: 'https://hooks.example.com/svc', webhook_secret_set: true });
    expect(read.body).not.toContain(secret1);
    const other = await api(bob, 'PATCH', '/api/v1/agents/me', { status: 'idle' });
    expect(other.json()).not.toHaveProperty('webhook_secret');

    // the relay can sign with it
    const target = await relay.ctx.stores.profiles.webhookTarget('acme', 'bob.agent:1');
    expect(target).toEqual({ endpoint_url: 'https://hooks.example.com/svc', webhook_secret: secret1 });

    // changing the URL while set keeps the secret and does not show it
    const moved = await api(bob, 'PATCH', '/api/v1/agents/me', { endpoint_url: 'https://hooks2.example.com/in' });
    expect(moved.json()).toMatchObject({ endpoint_url: 'https://hooks2.example.com/in', webhook_secret_set: true });
    expect(moved.json()).not.toHaveProperty('webhook_secret');
    expect((await relay.ctx.stores.profiles.webhookTarget('acme', 'bob.agent:1'))?.webhook_secret).toBe(secret1);

    // null clears URL and secret
    const cleared = await api(bob, 'PATCH', '/api/v1/agents/me', { endpoint_url: null });
    expect(cleared.json()).toMatchObject({ endpoint_url: null, webhook_secret_set: false });
    expect(await relay.ctx.stores.profiles.webhookTarget('acme', 'bob.agent:1')).toBeUndefined();

    // setting it again generates a new secret; the old one no longer verifies
    const again = await api(bob, 'PATCH', '/api/v1/agents/me', { endpoint_url: 'https://hooks.example.com/svc' });
    const secret2 = secretOf(again.json());
    expect(secret2).toMatch(/^[0-9a-f]{64}$/);
    expect(secret2).not.toBe(secret1);
    const body = '{"event":"message.received","id":"m1"}';
    const sig = (key: string) => createHmac('sha256', key).update(body).digest('hex');
    const stored = (await relay.ctx.stores.profiles.webhookTarget('acme', 'bob.agent:1'))?.webhook_secret as string;
    expect(sig(stored)).toBe(sig(secret2 as string));
    expect(sig(stored)).not.toBe(sig(secret1 as string));

    // blank (whitespace) clears too
    const blank = await api(bob, 'PATCH', '/api/v1/agents/me', { endpoint_url: '   ' });
    expect(blank.json()).toMatchObject({ endpoint_url: null, webhook_secret_set: false });
    // clearing an already clear endpoint is fine
    expect((await api(bob, 'PATCH', '/api/v1/agents/me', { endpoint_url: null })).statusCode).toBe(200);
  });

  it('refuses non-https, relative, credentialed and overlong URLs with invalid_endpoint_url, changing nothing', async () => {
    const set = await api(alice, 'PATCH', '/api/v1/agents/me', { endpoint_url: 'https://alice.example/hook' });
    const secret = secretOf(set.json());
    const long = `https://a.example/${'p'.repeat(2048 - 'https://a.example/'.length + 1)}`;
    for (const url of [
      'http://alice.example/hook',
      'ftp://alice.example/',
      '/relative/path',
      'alice.example/hook',
      'https://user:pw@alice.example/hook',
      'https://user@alice.example/hook',
      'https://',
      'not a url',
      long,
    ]) {
      const res = await api(alice, 'PATCH', '/api/v1/agents/me', { endpoint_url: url, status: 'changed?' });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error, url).toBe('invalid_endpoint_url');
    }
    const read = (await api(alice, 'GET', '/api/v1/agents/me')).json();
    expect(read).toMatchObject({ endpoint_url: 'https://alice.example/hook', webhook_secret_set: true });
    expect(read.status).not.toBe('changed?');
    expect((await relay.ctx.stores.profiles.webhookTarget('acme', 'alice'))?.webhook_secret).toBe(secret);
    // exactly 2048 characters is accepted
    const max = `https://a.example/${'p'.repeat(2048 - 'https://a.example/'.length)}`;
    expect(max).toHaveLength(2048);
    expect((await api(alice, 'PATCH', '/api/v1/agents/me', { endpoint_url: max })).statusCode).toBe(200);
  });

  it('checkEndpointUrl normalizes the URL', async () => {
    await expect(checkEndpointUrl(' https://Example.COM ')).resolves.toBe('https://example.com/');
    await expect(checkEndpointUrl('http://example.com')).rejects.toMatchObject({ code: 'invalid_endpoint_url' });
  });

  it('a re-enrolled agent id keeps neither the old endpoint nor the old secret', async () => {
    const carol = await enrollAgent('acme', 'carol');
    await api(carol, 'PATCH', '/api/v1/agents/me', { endpoint_url: 'https://carol.example/hook', location: 'Lyon' });
    const old = await relay.ctx.ledger.revokeAgent('acme', 'carol', relay.ctx.now());
    await relay.ctx.ledger.markCleanupDone(old?.id as string); // no bus in-process
    expect(await relay.ctx.stores.profiles.webhookTarget('acme', 'carol')).toBeUndefined();
    const carol2 = await enrollAgent('acme', 'carol');
    const me = (await api(carol2, 'GET', '/api/v1/agents/me')).json();
    expect(me).toMatchObject({ endpoint_url: null, webhook_secret_set: false, location: null });
    const again = await api(carol2, 'PATCH', '/api/v1/agents/me', { endpoint_url: 'https://carol.example/hook' });
    expect(again.json().webhook_secret).toMatch(/^[0-9a-f]{64}$/);
  });

  it('never writes a secret to the log', () => {
    expect(generated.length).toBeGreaterThanOrEqual(3);
    const log = relay.logLines.join('\n');
    expect(log).toContain('profile updated');
    for (const secret of generated) expect(log).not.toContain(secret);
  });
});

describe('heartbeat and presence', () => {
  it('records last_seen_at and presence, optionally status, shown in both profile reads', async () => {
    const dave = await enrollAgent('acme', 'dave');
    const bare = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/agents/me/heartbeat',
      headers: { authorization: `Bearer ${dave}` },
    });
    expect(bare.statusCode, bare.body).toBe(200);
    expect(bare.json()).toMatchObject({ presence: 'online', status: null, last_seen_at: expect.any(String) });

    const withStatus = await api(dave, 'POST', '/api/v1/agents/me/heartbeat', {
      status: 'away',
      status_text: 'lunch',
    });
    expect(withStatus.json()).toMatchObject({ presence: 'online', status: 'away', status_text: 'lunch' });

    expect((await api(dave, 'GET', '/api/v1/agents/me')).json()).toMatchObject({
      presence: 'online',
      status: 'away',
      status_text: 'lunch',
    });
    expect((await api(alice, 'GET', '/api/v1/agents/dave')).json()).toMatchObject({
      presence: 'online',
      status: 'away',
      status_text: 'lunch',
    });

    relay.advance(121_000);
    expect((await api(alice, 'GET', '/api/v1/agents/dave')).json()).toMatchObject({
      presence: 'offline',
      status: 'away',
    });
    expect((await api(dave, 'POST', '/api/v1/agents/me/heartbeat', {})).json().presence).toBe('online');

    for (const body of [{ status: 7 }, { online: true }, { status: 'x'.repeat(65) }]) {
      const res = await api(dave, 'POST', '/api/v1/agents/me/heartbeat', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBe('validation_failed');
    }
  });
});

describe('GET /api/v1/agents/{agent}', () => {
  it('shows the public profile of an agent of the same tenant, by number or id', async () => {
    const byNumber = await api(alice, 'GET', '/api/v1/agents/bob');
    expect(byNumber.statusCode).toBe(200);
    const body = byNumber.json();
    expect(body).toMatchObject({ agent_id: 'bob.agent:1', agent_number: 'bob', display_name: 'Agent bob.agent:1' });
    for (const hidden of ['endpoint_url', 'webhook_secret_set', 'webhook_secret', 'tenant_id', 'capabilities']) {
      expect(body).not.toHaveProperty(hidden);
    }
    const byId = await api(alice, 'GET', `/api/v1/agents/${encodeURIComponent('bob.agent:1')}`);
    expect(byId.json()).toEqual(body);
  });

  it('never reveals agents of another tenant, nor unknown ones', async () => {
    for (const [token, ref] of [
      [alice, 'eve'],
      [eve, 'alice'],
      [eve, 'bob'],
      [alice, 'nobody'],
    ] as const) {
      const res = await api(token, 'GET', `/api/v1/agents/${ref}`);
      expect(res.statusCode, ref).toBe(404);
      expect(res.json().error).toBe('not_found');
    }
  });
});

describe('OpenAPI', () => {
  it('documents the profile, social and contact routes', async () => {
    const res = await relay.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    const paths = Object.keys(res.json().paths);
    for (const p of [
      '/api/v1/agents/me',
      '/api/v1/agents/me/heartbeat',
      '/api/v1/agents/{agent}',
      '/api/v1/agents/{agent}/block',
      '/api/v1/agents/{agent}/mute',
      '/api/v1/agents/me/blocked',
      '/api/v1/agents/me/muted',
      '/api/v1/agents/{agent}/report',
      '/api/v1/contacts',
      '/api/v1/contacts/{contact_number}',
    ]) {
      expect(paths, p).toContain(p);
    }
  });
});
