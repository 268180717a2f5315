/** The CLI tests' fake daemon answers only what a test scripted. */
import { describe, expect, it } from 'vitest';
import { fakeLink, takeUnscripted } from './helpers.js';

describe('fakeLink', () => {
  it('answers a scripted call and records it', async () => {
    const { link, calls } = fakeLink({ listAgents: () => [] });
    expect(await link.listAgents()).toEqual([]);
    expect(calls).toEqual([{ method: 'listAgents', args: [] }]);
  });

  it('refuses a call the test did not script, naming it, and reports it after the test', async () => {
    const { link } = fakeLink({ listAgents: () => [] });
    await expect(link.ack('alice', 'm1')).rejects.toThrow('unscripted daemon call: ack');
    await expect(link.events()).rejects.toThrow('unscripted daemon call: events');
    // taken here, so this test's own afterEach check passes
    expect(takeUnscripted()).toEqual(['ack', 'events']);
  });
});
