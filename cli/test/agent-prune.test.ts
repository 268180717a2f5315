/**
 * `svc agent prune` against a real daemon on a real relay: an agent the relay revoked (its
 * session refused) is set aside, the others stay; --dry-run only lists.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '@svc/test-harness';
import { startDaemon, type TestDaemon, trustRelay } from '@svc/test-harness/daemon';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from './helpers.js';

let relay: BusRelay;
let d: TestDaemon;
const run = (argv: string[]) => svc(argv, { env: { SVC_HOME: d.home, SVC_AGENT: '' }, link: d.client });
const sessions = async () => Object.fromEntries((await d.client.status()).agents.map((a) => [a.name, a.session]));

beforeAll(async () => {
  [relay, d] = await Promise.all([inProcessBusRelay(), startDaemon()]);
  await trustRelay(relay, d);
  for (const agentId of ['carol', 'dave']) {
    await d.client.register({ enrollment_code: await relay.grant(agentId), name: agentId });
  }
  await until(async () => Object.values(await sessions()).every((s) => s === 'connected'), 20_000, 'both connected');
}, 60_000);

afterAll(async () => {
  await d?.daemon.close();
  await relay?.close();
});

describe('svc agent prune', () => {
  it('with nothing refused: nothing to prune, exit 0', async () => {
    const r = await run(['agent', 'prune']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Nothing to prune: no local agent is refused by its relay.\n');
    expect(JSON.parse((await run(['agent', 'prune', '--json'])).stdout)).toEqual([]);
  });

  it('lists a revoked agent with --dry-run, then sets it aside; the other agent stays', async () => {
    const ctx = relay.relay.context;
    await ctx.ledger.revokeAgent(ctx.config.defaultTenant, 'carol', ctx.now());
    await until(async () => (await sessions()).carol === 'refused', 30_000, 'carol refused');

    const dry = await run(['agent', 'prune', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toBe(
      'Would remove carol (carol): the relay of deployment dev refuses its identity.\nRun svc agent prune without --dry-run to remove them.\n',
    );
    expect(Object.keys(await sessions())).toEqual(['carol', 'dave']);
    // --as an agent that is not refused: nothing
    expect(JSON.parse((await run(['agent', 'prune', '--as', 'dave', '--json'])).stdout)).toEqual([]);

    const r = await run(['agent', 'prune', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([{ name: 'carol', agent_number: 'carol', deployment: 'dev', removed: true }]);
    expect(await sessions()).toEqual({ dave: 'connected' });
    // set aside with its archive and files, not deleted
    const aside = readdirSync(join(d.home, 'agents')).filter((f) => f.startsWith('.deregistered-carol-'));
    expect(aside).toHaveLength(1);
    expect(existsSync(join(d.home, 'agents', aside[0] as string, 'archive.db'))).toBe(true);
    // dave still works
    expect((await run(['whoami', '--as', 'dave', '--json'])).code).toBe(0);
  }, 60_000);

  it('--as an agent this machine does not have: unknown_agent, exit 1', async () => {
    const r = await run(['agent', 'prune', '--as', 'nobody']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('svc: error: No local agent "nobody". (unknown_agent)\n');
  });
});
