/** `svc register --local` and `svc doctor` (the local stack, a refused agent), against a scripted daemon link. */
import { describe, expect, it } from 'vitest';
import { AGENT, fakeLink, svc } from './helpers.js';

const status = (agents: unknown[]) => ({
  version: '0.1.0',
  pid: 1,
  home: '/h',
  started_at: '2025-01-01T00:00:00.000Z',
  vault: { kind: 'file-encrypted' },
  agents,
});

describe('svc register --local', () => {
  it('asks the daemon for a local agent by name; no grant, no deployment', async () => {
    const local = { ...AGENT, name: 'ann', agent_number: 'ann', deployment: 'local', api_url: '' };
    const { link, calls } = fakeLink({ registerLocal: () => local });
    const r = await svc(['register', '--local', '--name', 'ann', '--json'], { link });
    expect(r.code).toBe(0);
    expect(calls).toEqual([{ method: 'registerLocal', args: [{ name: 'ann' }] }]);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'ann', deployment: 'local' });
  });

  it('refuses a grant or a deployment with --local, and needs a name', async () => {
    const { link, calls } = fakeLink({});
    for (const args of [
      ['register', '--local', '--name', 'ann', '--enrollment-grant', 'svce1.x'],
      ['register', '--local', '--name', 'ann', '--deployment', 'dev'],
      ['register', '--local'],
    ]) {
      const r = await svc(args, { link });
      expect(r.code).toBe(2);
    }
    expect(calls).toEqual([]);
  });
});

describe('svc doctor', () => {
  it('an uplink identity or a --local agent without a relay session is no problem; the receive path is shown', async () => {
    const { link } = fakeLink({
      status: () =>
        status([
          {
            name: 'bob',
            agent_number: 'bob',
            deployment: 'dev',
            session: 'connected',
            kind: 'agent',
            receive: 'source',
            source: 'src_bob',
          },
          { name: 'uplink-b', agent_number: 'uplink-b', deployment: 'dev', session: 'offline', kind: 'uplink' },
          { name: 'ann', agent_number: 'ann', deployment: 'local', session: 'offline', kind: 'local' },
        ]),
      auditDeployments: () => [{ name: 'dev', deployment_id: 'dep_1', ok: true, problems: [] }],
      archiveIntegrity: () => [],
      // bob's alone: neither the uplink identity nor the local agent has a key record to check
      backfillKeys: (agent: string) => {
        expect(agent).toBe('bob');
        return { agent, agent_number: agent, state: 'signed', relay_version: 1, uploaded_version: null };
      },
    });
    const r = await svc(['doctor'], { link });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('bob (connected, via named source src_bob)');
    expect(r.stdout).toContain('uplink-b (uplink)');
    expect(r.stdout).toContain('No problems found.');
  });

  it('an agent whose deployment is no longer trusted here is a problem', async () => {
    const { link } = fakeLink({
      status: () =>
        status([{ name: 'bob', agent_number: 'bob', deployment: 'gone', session: 'connected', kind: 'agent' }]),
      auditDeployments: () => [],
      archiveIntegrity: () => [],
      backfillKeys: (agent: string) => ({
        agent,
        agent_number: agent,
        state: 'signed',
        relay_version: 1,
        uploaded_version: null,
      }),
    });
    const r = await svc(['doctor'], { link });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      'agent bob: its deployment gone is no longer trusted here; fetch it again with svc deployment fetch --url URL --trust FILE --name gone',
    );
  });

  it('an agent that cannot connect is a problem that says why', async () => {
    const dan = { name: 'dan', agent_number: 'dan', deployment: 'dev', session: 'connecting', kind: 'agent' };
    const error = 'The relay at http://r cannot be reached (ECONNREFUSED)';
    const bare = fakeLink({ status: () => status([dan]), auditDeployments: () => [], archiveIntegrity: () => [] });
    expect((await svc(['doctor'], { link: bare.link })).stdout).toMatch(/agent dan: session connecting\n/);
    const told = fakeLink({
      status: () => status([{ ...dan, session_error: error }]),
      auditDeployments: () => [],
      archiveIntegrity: () => [],
    });
    expect((await svc(['doctor'], { link: told.link })).stdout).toContain(`agent dan: session connecting: ${error}`);
  });

  it('an agent the relay refuses is a problem that says what to do', async () => {
    const { link } = fakeLink({
      status: () =>
        status([{ name: 'carol', agent_number: 'carol', deployment: 'dev', session: 'refused', kind: 'agent' }]),
      auditDeployments: () => [{ name: 'dev', deployment_id: 'dep_1', ok: true, problems: [] }],
      archiveIntegrity: () => [],
    });
    const r = await svc(['doctor'], { link });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('carol (refused)');
    expect(r.stdout).toMatch(
      /The relay refuses agent carol's identity: it was probably revoked\. If this persists.*\(svc deregister --local carol\)/,
    );
  });
});
