/**
 * The daemon's named operations on the agent's relay (profile, presence, directory,
 * contacts, block/mute, reports) against a REAL relay process: the daemon builds the
 * relay paths, and a relay refusal comes back with the relay's own code and status.
 */
import { until } from '@svc/test-harness';
import { startDaemon, type TestDaemon, trustRelay } from '@svc/test-harness/daemon';
import { grantCode, type RelayProcess, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalAgent } from '../src/client/index.js';

let relay: RelayProcess;
let d: TestDaemon;
let alice: LocalAgent;
let bob: LocalAgent;

const grant = (agentId: string) => grantCode(relay, agentId, ['--tenant', 'acme']);

beforeAll(async () => {
  [relay, d] = await Promise.all([spawnRelay({ env: { SVC_RELAY_TENANTS: 'acme' } }), startDaemon()]);
  await trustRelay(relay, d);
  alice = await d.client.register({ enrollment_code: await grant('alice'), name: 'alice' });
  bob = await d.client.register({ enrollment_code: await grant('bob'), name: 'bob' });
  await until(
    async () => (await d.client.status()).agents.every((a) => a.session === 'connected'),
    20_000,
    'both connected',
  );
}, 90_000);

afterAll(async () => {
  await d?.daemon.close();
  await relay?.stop();
});

describe('named relay operations', () => {
  it('contacts: add (created), update (not created), list, remove', async () => {
    const added = await d.client.saveContact('alice', { agent_number: bob.agent_number, alias: 'B' });
    expect(added).toMatchObject({ created: true, contact: { agent_number: bob.agent_number, alias: 'B' } });
    const updated = await d.client.saveContact('alice', { agent_number: bob.agent_number, notes: 'met at lunch' });
    expect(updated).toMatchObject({ created: false, contact: { alias: 'B', notes: 'met at lunch' } });
    expect((await d.client.contacts('alice')).contacts.map((c) => c.agent_number)).toEqual([bob.agent_number]);
    await d.client.removeContact('alice', bob.agent_number);
    expect((await d.client.contacts('alice')).contacts).toEqual([]);
  });

  it('own profile: read, update, heartbeat with a status; another agent by number', async () => {
    const updated = await d.client.updateProfile('alice', { display_name: 'Alice A.' });
    expect(updated).toMatchObject({ agent_number: alice.agent_number, display_name: 'Alice A.' });
    expect(await d.client.profile('alice')).toMatchObject({ display_name: 'Alice A.', webhook_secret_set: false });
    expect(await d.client.heartbeat('alice', { status: 'reviewing' })).toMatchObject({ status: 'reviewing' });
    expect(await d.client.peerProfile('bob', alice.agent_number)).toMatchObject({
      agent_number: alice.agent_number,
      display_name: 'Alice A.',
    });
  });

  it('block and mute with their lists; a mute acts on the session at once; a report is accepted', async () => {
    expect(await d.client.relate('alice', 'block', bob.agent_number)).toMatchObject({ agent_number: bob.agent_number });
    expect((await d.client.blocked('alice')).blocked.map((e) => e.agent_number)).toEqual([bob.agent_number]);
    await d.client.unrelate('alice', 'block', bob.agent_number);
    expect((await d.client.blocked('alice')).blocked).toEqual([]);

    await d.client.relate('alice', 'mute', bob.agent_number);
    expect((await d.client.muted('alice')).muted.map((e) => e.agent_number)).toEqual([bob.agent_number]);
    const quiet = await d.client.send('bob', { to: alice.agent_number, content: 'muted on arrival' });
    const archived = await until(
      async () => (await d.client.inbox('alice', { source: 'local' })).find((m) => m.message_id === quiet.message_id),
      15_000,
      'alice archived the message',
    );
    expect(archived.muted).toBe(true);
    await d.client.unrelate('alice', 'mute', bob.agent_number);
    expect((await d.client.muted('alice')).muted).toEqual([]);

    const report = await d.client.report('alice', bob.agent_number, { reason: 'unsolicited advertising' });
    expect(report).toMatchObject({ report_id: expect.any(String), received_at: expect.any(String) });
  });

  it('offers no generic relay call: a client asks for an operation by name', async () => {
    await expect(
      d.client.request('POST', '/v1/agents/alice/relay', { method: 'GET', path: 'agents/me' }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it("a relay refusal keeps the relay's code and status; a bad body is the daemon's validation_failed", async () => {
    await expect(d.client.relate('alice', 'block', alice.agent_number)).rejects.toMatchObject({
      code: 'cannot_target_self',
      status: 400,
    });
    await expect(d.client.peerProfile('alice', 'nobody-here')).rejects.toMatchObject({ status: 404 });
    await expect(d.client.saveContact('alice', { agent_number: '' } as { agent_number: string })).rejects.toMatchObject(
      { code: 'validation_failed', status: 400 },
    );
  });
});
