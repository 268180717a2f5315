/**
 * `svc register` waits for the new agent to receive (the specification's --no-autostart says
 * a registration otherwise does): with wait_receiving, the answer comes once its session is
 * connected, and says so; a relay that does not let it connect within the wait gets an
 * answer all the same (the agent is registered), saying it does not receive yet.
 */
import type { DaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startBehindFaultProxy } from './fault-proxy.js';

let proxy: FaultProxy;
let stage: DaemonsOnRelay<'alice'>;

beforeAll(async () => {
  ({ stage, proxy } = await startBehindFaultProxy({ agents: ['alice'] }));
}, 90_000);

afterAll(() => stage?.close());

const sessionOf = async (name: string) =>
  (await stage.daemons.alice.client.status()).agents.find((a) => a.name === name)?.session;

describe('registering with wait_receiving', () => {
  it('answers once the agent receives', async () => {
    const d = stage.daemons.alice;
    const agent = await d.client.register({
      enrollment_code: await stage.grant('carol'),
      name: 'carol',
      wait_receiving: true,
    });
    expect(agent).toMatchObject({ name: 'carol', receiving: true });
    expect(agent).not.toHaveProperty('session_error');
    expect(await sessionOf('carol')).toBe('connected');
  });

  it('answers after its wait when the relay lets it not connect, registered all the same', async () => {
    const d = stage.daemons.alice;
    const code = await stage.grant('dora');
    proxy.readsHang = true;
    try {
      const agent = await d.client.register({ enrollment_code: code, name: 'dora', wait_receiving: true });
      expect(agent).toMatchObject({ name: 'dora', receiving: false });
      expect(await sessionOf('dora')).toBe('connecting');
    } finally {
      proxy.unhang();
    }
    // it keeps trying, and receives once the relay answers
    await expect.poll(() => sessionOf('dora'), { timeout: 15_000 }).toBe('connected');
  }, 30_000);

  it('without it, answers at once with no word on receiving', async () => {
    const agent = await stage.daemons.alice.client.register({
      enrollment_code: await stage.grant('erin'),
      name: 'erin',
    });
    expect(agent.name).toBe('erin');
    expect(agent).not.toHaveProperty('receiving');
  });
});
