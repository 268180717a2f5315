/** Block, mute, report and contacts in-process, with tenant isolation. */

import { type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TwoTenants, twoTenants } from './helpers/two-tenants.js';

let relay: InProcessRelay;
let enrollAgent: TwoTenants['enroll'];
const api = (...args: Parameters<InProcessRelay['api']>) => relay.api(...args);

let alice: string;
let bob: string;
let eve: string;
const ledger = () => relay.ctx.ledger;

beforeAll(async () => {
  // eve's number collides with an acme agent's (carol's) on purpose
  ({ relay, enroll: enrollAgent, alice, bob, eve } = await twoTenants({ eveNumber: 'carol' }));
  await enrollAgent('acme', 'carol');
});
afterAll(async () => {
  await relay.close();
});

describe.each(['block', 'mute'] as const)('%s', (relation) => {
  const list = relation === 'block' ? 'blocked' : 'muted';
  const check = async (tenantId: string, agentId: string, targetAgentId: string) =>
    await relay.ctx.stores.relations.has(relation, tenantId, agentId, targetAgentId);

  it('is idempotent, accepts the agent number or id, and lists with number, name and since', async () => {
    const first = await api(alice, 'POST', `/api/v1/agents/bob/${relation}`);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({
      agent_id: 'bob.agent:1',
      agent_number: 'bob',
      display_name: 'Agent bob.agent:1',
      since: expect.any(String),
    });
    relay.advance(1000);
    const second = await api(alice, 'POST', `/api/v1/agents/${encodeURIComponent('bob.agent:1')}/${relation}`);
    expect(second.statusCode).toBe(200);
    expect(second.json().since).toBe(first.json().since);
    expect(await check('acme', 'alice', 'bob.agent:1')).toBe(true);
    expect(await check('acme', 'bob.agent:1', 'alice')).toBe(false);

    const listed = await api(alice, 'GET', `/api/v1/agents/me/${list}`);
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual({ [list]: [first.json()] });
    expect((await api(bob, 'GET', `/api/v1/agents/me/${list}`)).json()).toEqual({ [list]: [] });

    const lifted = await api(alice, 'DELETE', `/api/v1/agents/bob/${relation}`);
    expect(lifted.statusCode).toBe(204);
    expect(lifted.body).toBe('');
    expect((await api(alice, 'DELETE', `/api/v1/agents/bob/${relation}`)).statusCode).toBe(204);
    expect(await check('acme', 'alice', 'bob.agent:1')).toBe(false);
    expect((await api(alice, 'GET', `/api/v1/agents/me/${list}`)).json()).toEqual({ [list]: [] });
  });

  it('refuses oneself with 400 cannot_target_self and unknown agents with 404', async () => {
    for (const ref of ['alice', 'me']) {
      const self = await api(alice, 'POST', `/api/v1/agents/${ref}/${relation}`);
      // "me" is not an agent number here, so it is unknown
      expect(self.statusCode, ref).toBe(ref === 'me' ? 404 : 400);
      if (ref === 'alice') expect(self.json().error).toBe('cannot_target_self');
    }
    for (const method of ['POST', 'DELETE'] as const) {
      const res = await api(alice, method, `/api/v1/agents/nobody/${relation}`);
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toBe('not_found');
    }
  });

  it('never reaches another tenant, even through a colliding agent number', async () => {
    const res = await api(eve, 'POST', `/api/v1/agents/alice/${relation}`);
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toBe('not_found');
    // "carol" in globex is eve herself; acme's carol is invisible to her
    const own = await api(eve, 'POST', `/api/v1/agents/carol/${relation}`);
    expect(own.json().error).toBe('cannot_target_self');
    // acme's alice naming "carol" reaches acme's carol, never eve
    const acme = await api(alice, 'POST', `/api/v1/agents/carol/${relation}`);
    expect(acme.json().agent_id).toBe('carol');
    expect(await check('acme', 'alice', 'eve')).toBe(false);
    expect(await check('globex', 'alice', 'carol')).toBe(false);
    await api(alice, 'DELETE', `/api/v1/agents/carol/${relation}`);
  });
});

describe('blocks survive re-enrollment', () => {
  it('are keyed by agent id, and can be lifted by the recorded number while the target is not enrolled', async () => {
    const dan = await enrollAgent('acme', 'dan');
    expect(dan).toBeTruthy();
    expect((await api(alice, 'POST', '/api/v1/agents/dan/block')).statusCode).toBe(200);
    const row = await ledger().revokeAgent('acme', 'dan', relay.ctx.now());
    await ledger().markCleanupDone(row?.id as string);
    // dan is gone: the list still shows the block under the recorded number, no name
    expect((await api(alice, 'GET', '/api/v1/agents/me/blocked')).json().blocked).toEqual([
      { agent_id: 'dan', agent_number: 'dan', display_name: null, since: expect.any(String) },
    ]);
    await enrollAgent('acme', 'dan');
    expect(await relay.ctx.stores.relations.has('block', 'acme', 'alice', 'dan')).toBe(true);
    await ledger().markCleanupDone(((await ledger().revokeAgent('acme', 'dan', relay.ctx.now())) as { id: string }).id);
    expect((await api(alice, 'DELETE', '/api/v1/agents/dan/block')).statusCode).toBe(204);
    expect(await relay.ctx.stores.relations.has('block', 'acme', 'alice', 'dan')).toBe(false);
  });
});

describe('report', () => {
  const report = (token: string, ref: string, reason: unknown) =>
    api(token, 'POST', `/api/v1/agents/${ref}/report`, { reason });

  it('accepts 10 and 2000 characters after trimming (202) and stores reporter, target and time', async () => {
    const ten = await report(alice, 'bob', `   ${'a'.repeat(10)}   `);
    expect(ten.statusCode, ten.body).toBe(202);
    expect(ten.json()).toEqual({ report_id: expect.stringMatching(/^rpt_/), received_at: expect.any(String) });
    const max = await report(alice, 'bob.agent:1', 'é'.repeat(2000));
    expect(max.statusCode, max.body).toBe(202);
    const stored = await relay.ctx.stores.reports.about('acme', 'bob.agent:1');
    expect(stored).toHaveLength(2);
    expect(stored.map((r) => r.reason).sort()).toEqual(['a'.repeat(10), 'é'.repeat(2000)].sort());
    expect(stored[0]).toMatchObject({ reporter_agent_id: 'alice', target_agent_id: 'bob.agent:1', tenant_id: 'acme' });
    expect(stored[0]?.created_at).toEqual(expect.any(Number));
  });

  it('refuses 9 and 2001 characters, blank padding, and wrong types', async () => {
    for (const reason of ['a'.repeat(9), 'a'.repeat(2001), `  ${'a'.repeat(9)}  `, ' '.repeat(40)]) {
      const res = await report(alice, 'bob', reason);
      expect(res.statusCode, String(reason.length)).toBe(400);
      expect(res.json().error).toBe('invalid_report_reason');
    }
    for (const body of [{ reason: 12345678901 }, {}, { reason: 'long enough reason', extra: 1 }]) {
      const res = await api(alice, 'POST', '/api/v1/agents/bob/report', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBe('validation_failed');
    }
    expect(await relay.ctx.stores.reports.about('acme', 'bob.agent:1')).toHaveLength(2);
  });

  it('refuses oneself, unknown agents and other tenants', async () => {
    expect((await report(alice, 'alice', 'reporting myself here')).json().error).toBe('cannot_target_self');
    const unknown = await report(alice, 'nobody', 'this agent does not exist');
    expect(unknown.statusCode).toBe(404);
    const cross = await report(eve, 'alice', 'cross tenant report attempt');
    expect(cross.statusCode).toBe(404);
    expect(cross.json().error).toBe('not_found');
    expect(await relay.ctx.stores.reports.about('acme', 'alice')).toEqual([]);
  });
});

describe('contacts', () => {
  it('refuses adding yourself, like blocking or muting yourself', async () => {
    const res = await api(alice, 'POST', '/api/v1/contacts', { agent_number: 'alice' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('cannot_target_self');
    expect((await api(alice, 'GET', '/api/v1/contacts')).json()).toEqual({ contacts: [] });
  });

  it('adds (201), updates alias and notes on a second add (200), lists and deletes', async () => {
    const added = await api(alice, 'POST', '/api/v1/contacts', { agent_number: 'bob', alias: ' Bobby ' });
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json()).toEqual({
      agent_id: 'bob.agent:1',
      agent_number: 'bob',
      display_name: 'Agent bob.agent:1',
      alias: 'Bobby',
      notes: null,
      added_at: expect.any(String),
      updated_at: expect.any(String),
    });
    relay.advance(1000);
    const updated = await api(alice, 'POST', '/api/v1/contacts', { agent_number: 'bob', notes: 'met at the fair' });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({ alias: 'Bobby', notes: 'met at the fair' });
    expect(updated.json().updated_at > updated.json().added_at).toBe(true);
    const cleared = await api(alice, 'POST', '/api/v1/contacts', { agent_number: 'bob', alias: null });
    expect(cleared.json()).toMatchObject({ alias: null, notes: 'met at the fair' });
    await api(alice, 'POST', '/api/v1/contacts', { agent_number: 'carol' });

    const list = await api(alice, 'GET', '/api/v1/contacts');
    expect(list.statusCode).toBe(200);
    expect(list.json().contacts.map((c: { agent_number: string }) => c.agent_number)).toEqual(['bob', 'carol']);
    expect((await api(bob, 'GET', '/api/v1/contacts')).json()).toEqual({ contacts: [] });

    expect((await api(alice, 'DELETE', '/api/v1/contacts/bob')).statusCode).toBe(204);
    const again = await api(alice, 'DELETE', '/api/v1/contacts/bob');
    expect(again.statusCode).toBe(404);
    expect(again.json().error).toBe('not_found');
    expect((await api(alice, 'GET', '/api/v1/contacts')).json().contacts).toHaveLength(1);
    // bob has no contact "carol", though carol exists
    expect((await api(bob, 'DELETE', '/api/v1/contacts/carol')).statusCode).toBe(404);
  });

  it('needs an existing agent number of the same tenant', async () => {
    const unknown = await api(alice, 'POST', '/api/v1/contacts', { agent_number: 'nobody' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toBe('not_found');
    // an agent id is not an agent number
    const byId = await api(alice, 'POST', '/api/v1/contacts', { agent_number: 'bob.agent:1' });
    expect(byId.statusCode).toBe(400);
    const cross = await api(eve, 'POST', '/api/v1/contacts', { agent_number: 'alice' });
    expect(cross.statusCode).toBe(404);
    // eve's "carol" is herself in globex, never acme's carol: refused as adding herself
    const own = await api(eve, 'POST', '/api/v1/contacts', { agent_number: 'carol' });
    expect(own.json().error).toBe('cannot_target_self');
    expect((await api(eve, 'DELETE', '/api/v1/contacts/alice')).statusCode).toBe(404);
  });

  it('refuses bad bodies with 400 and a code', async () => {
    for (const body of [
      {},
      { agent_number: 7 },
      { agent_number: 'bob', alias: 5 },
      { agent_number: 'bob', colour: 'red' },
      { agent_number: 'bob', notes: 'n'.repeat(2001) },
      { agent_number: 'has space' },
    ]) {
      const res = await api(alice, 'POST', '/api/v1/contacts', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error).toBe('validation_failed');
    }
    const badJson = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/contacts',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      payload: '{',
    });
    expect(badJson.json().error).toBe('invalid_json');
  });
});

describe('authentication and outages', () => {
  it('every route needs the access token', async () => {
    for (const [method, url] of [
      ['POST', '/api/v1/agents/bob/block'],
      ['DELETE', '/api/v1/agents/bob/mute'],
      ['GET', '/api/v1/agents/me/blocked'],
      ['GET', '/api/v1/agents/me/muted'],
      ['POST', '/api/v1/agents/bob/report'],
      ['POST', '/api/v1/contacts'],
      ['GET', '/api/v1/contacts'],
      ['DELETE', '/api/v1/contacts/bob'],
      ['GET', '/api/v1/agents/bob'],
      ['POST', '/api/v1/agents/me/heartbeat'],
      ['PATCH', '/api/v1/agents/me'],
    ] as const) {
      const res = await relay.app.inject({ method, url });
      expect(res.statusCode, url).toBe(401);
      expect(res.json().error, url).toBe('missing_token');
    }
  });

  it('answers 503 ledger_closed when the ledger cannot answer', async () => {
    const other = await inProcessRelay();
    await other.ctx.ledger.close();
    for (const [method, url] of [
      ['GET', '/api/v1/contacts'],
      ['POST', '/api/v1/agents/x/block'],
      ['PATCH', '/api/v1/agents/me'],
    ] as const) {
      const res = await other.app.inject({ method, url, headers: { authorization: `Bearer ${alice}` } });
      expect(res.statusCode, url).toBe(503);
      expect(res.json().error).toBe('ledger_closed');
    }
    await other.close();
  });
});
