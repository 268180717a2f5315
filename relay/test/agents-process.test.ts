/** Profile, block and contacts against a real relay process: the short happy path. */
import { readFileSync } from 'node:fs';
import { call, enrollmentBody, newIdentity } from '@svc/test-harness/agent-client';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: RelayProcess;

async function enroll(agentId: string): Promise<Record<string, string>> {
  const grant = await runRelayCli(['grant', '--agent-id', agentId, '--json'], relay.env);
  expect(grant.code, grant.stderr).toBe(0);
  const code = (JSON.parse(grant.stdout) as { enrollment_code: string }).enrollment_code;
  const res = await call<Record<string, string>>(
    relay.url,
    'POST',
    '/api/v1/enrollment',
    enrollmentBody(code, newIdentity()),
  );
  expect(res.status).toBe(201);
  return res.body;
}

beforeAll(async () => {
  relay = await spawnRelay();
}, 60_000);

afterAll(async () => {
  await relay?.stop();
});

describe('agent profile, block and contacts in a relay process', () => {
  it('updates the profile, blocks an agent and keeps contacts', async () => {
    const alice = await enroll('alice');
    await enroll('bob');
    const auth = { authorization: `Bearer ${alice.access_token}` };

    const patched = await call(
      relay.url,
      'PATCH',
      '/api/v1/agents/me',
      { display_name: 'Alice', timezone: 'Europe/Paris', endpoint_url: 'https://alice.example/hook' },
      auth,
    );
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ display_name: 'Alice', timezone: 'Europe/Paris', webhook_secret_set: true });
    const secret = patched.body.webhook_secret as string;
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const me = await call(relay.url, 'GET', '/api/v1/agents/me', undefined, auth);
    expect(me.body).toMatchObject({ endpoint_url: 'https://alice.example/hook', webhook_secret_set: true });
    expect(me.body).not.toHaveProperty('webhook_secret');
    const beat = await call(relay.url, 'POST', '/api/v1/agents/me/heartbeat', undefined, auth);
    expect(beat.body).toMatchObject({ presence: 'online' });
    const bobProfile = await call(relay.url, 'GET', '/api/v1/agents/bob', undefined, auth);
    expect(bobProfile.body).toMatchObject({ agent_number: 'bob', presence: 'offline' });

    expect((await call(relay.url, 'POST', '/api/v1/agents/bob/block', undefined, auth)).status).toBe(200);
    expect((await call(relay.url, 'POST', '/api/v1/agents/bob/block', undefined, auth)).status).toBe(200);
    const blocked = await call<{ blocked: Array<{ agent_number: string }> }>(
      relay.url,
      'GET',
      '/api/v1/agents/me/blocked',
      undefined,
      auth,
    );
    expect(blocked.body.blocked.map((b) => b.agent_number)).toEqual(['bob']);

    const added = await call(relay.url, 'POST', '/api/v1/contacts', { agent_number: 'bob', alias: 'B' }, auth);
    expect(added.status).toBe(201);
    const contacts = await call<{ contacts: Array<{ alias: string }> }>(
      relay.url,
      'GET',
      '/api/v1/contacts',
      undefined,
      auth,
    );
    expect(contacts.body.contacts.map((c) => c.alias)).toEqual(['B']);
    expect((await call(relay.url, 'DELETE', '/api/v1/contacts/bob', undefined, auth)).status).toBe(204);

    const bad = await call(relay.url, 'PATCH', '/api/v1/agents/me', { endpoint_url: 'http://alice.example/' }, auth);
    expect(bad).toMatchObject({ status: 400, body: { error: 'invalid_endpoint_url' } });

    // the secret never reaches the relay's log
    expect(readFileSync(relay.logFile, 'utf8')).not.toContain(secret);
  });
});
