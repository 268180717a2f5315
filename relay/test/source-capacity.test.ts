/**
 * The capacity figures: `/readyz` carries configured, used and remaining consumers per
 * tenant with the ledger's named-source rows (a full tenant stays ready), and
 * `svc-relay nats reconcile-source-capacity` reports the bus and the ledger side by side,
 * names an injected disagreement of each kind, changes nothing, and fixes them with --apply.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { call, sourceClaimBody, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { runRelayCli } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: BusRelay;
let edge: TestAgent;

const agents = new Map<string, TestAgent>();
const claim = (agent: string) =>
  call(relay.url, 'POST', '/api/v1/sources', sourceClaimBody(agents.get(agent) as TestAgent, edge.number), edge.auth);
const jsm = async () => jetstreamManager(await relay.relay.context.bus.tenantConnection('default'));
/** `svc-relay nats reconcile-source-capacity` on this relay, as text; `reconcile` as JSON. */
const reconcileText = (...extra: string[]) =>
  runRelayCli(
    [
      'nats',
      'reconcile-source-capacity',
      '--data-dir',
      relay.dataDir,
      '--deployment-id',
      relay.relay.context.deployment.deploymentId,
      ...extra,
    ],
    {},
    { bare: true },
  );
const reconcile = (...extra: string[]) => reconcileText('--json', ...extra);

beforeAll(async () => {
  relay = await inProcessBusRelay({ SVC_RELAY_TENANT_MAX_CONSUMERS: '2' });
  edge = await relay.enroll('edge', undefined, ['nats-relay']);
  for (const id of ['a', 'b', 'c']) agents.set(id, await relay.enroll(id));
}, 30_000);
afterAll(async () => relay?.close());

describe('capacity figures', () => {
  it('/readyz: configured, used, remaining and the named-source rows; a full tenant stays ready', async () => {
    expect((await claim('a')).status).toBe(200);
    expect((await claim('b')).status).toBe(200);
    const res = await call<{ status: string; capacity: Record<string, unknown> }>(relay.url, 'GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ready');
    expect(res.body.capacity.default).toMatchObject({
      configured: 2,
      used: 2,
      remaining: 0,
      sources_limit: 400,
      named_sources: [
        { agent_id: 'a', edge_agent_id: 'edge', durable: 'src_a' },
        { agent_id: 'b', edge_agent_id: 'edge', durable: 'src_b' },
      ],
    });
  });

  it('reconcile: the same figures from the bus and the ledger, in agreement', async () => {
    const r = await reconcile();
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      tenants: [
        {
          tenant_id: 'default',
          bus: { consumers: 2, source_consumers: ['src_a', 'src_b'] },
          ledger: { named_sources: 2, durables: ['src_a', 'src_b'] },
          configured: 2,
          remaining: 0,
        },
      ],
      disagreements: [],
      applied: false,
    });
  }, 30_000);

  it('reconcile names every disagreement and changes nothing unless asked', async () => {
    const m = await jsm();
    await m.consumers.delete('SVC_MSGS', 'src_a');
    await m.consumers.add('SVC_MSGS', {
      durable_name: 'src_ghost',
      filter_subject: 'msg.ghost',
      ack_policy: 'explicit' as never,
    });
    const r = await reconcile();
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.disagreements).toEqual([
      {
        tenant_id: 'default',
        kind: 'consumer_without_row',
        durable: 'src_ghost',
        action: 'delete consumer src_ghost of SVC_MSGS',
      },
      {
        tenant_id: 'default',
        kind: 'row_without_consumer',
        durable: 'src_a',
        action: 'release the ledger row of src_a',
      },
    ]);
    // nothing changed
    expect((await m.consumers.info('SVC_MSGS', 'src_ghost')).name).toBe('src_ghost');
    expect(await relay.relay.context.stores.sources.countForTenant('default')).toBe(2);
    const text = await reconcileText();
    expect(text.stdout).toContain('src_ghost: consumer on the bus, no ledger row; would: delete consumer src_ghost');
    expect(text.stdout).toContain('nothing changed; run again with --apply');

    const applied = await reconcile('--apply');
    expect(JSON.parse(applied.stdout)).toMatchObject({ applied: true });
    await expect(m.consumers.info('SVC_MSGS', 'src_ghost')).rejects.toThrow(/consumer not found/);
    expect(await relay.relay.context.stores.sources.countForTenant('default')).toBe(1);
    expect(JSON.parse((await reconcile()).stdout).disagreements).toEqual([]);
  }, 60_000);

  it('refuses a deployment id other than the data dir’s', async () => {
    const r = await runRelayCli(
      ['nats', 'reconcile-source-capacity', '--data-dir', relay.dataDir, '--deployment-id', 'someone-else', '--json'],
      {},
      { bare: true },
    );
    expect(r.code).not.toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: 'config_invalid' });
  }, 30_000);
});
