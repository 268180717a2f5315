/**
 * The capacity figures: `/readyz` carries configured, used and remaining consumers per
 * tenant and how many named sources the ledger holds (a full tenant stays ready); their
 * rows, which name agents, only for an administrator of the tenant; and
 * `svc-relay nats reconcile-source-capacity` reports the bus and the ledger side by side,
 * names an injected disagreement of each kind, changes nothing, and fixes them with --apply.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { tempDir } from '@svc/test-harness';
import { call, sourceClaimBody, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { startTestAuthority, type TestAuthority } from '@svc/test-harness/oidc-provider';
import { runRelayCli } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: BusRelay;
let edge: TestAgent;
let authority: TestAuthority;
const DEPLOYMENT = 'dep-source-capacity';

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
  authority = await startTestAuthority({ deploymentId: DEPLOYMENT, tenants: ['default'] });
  const caFile = join(tempDir(), 'authority-ca.pem');
  writeFileSync(caFile, authority.caPem);
  relay = await inProcessBusRelay({
    SVC_RELAY_TENANT_MAX_CONSUMERS: '2',
    SVC_RELAY_DEPLOYMENT_ID: DEPLOYMENT,
    SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: authority.issuer,
    SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: authority.audience,
    SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: authority.clientId,
    SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE: caFile,
  });
  edge = await relay.enroll('edge', undefined, ['nats-relay']);
  for (const id of ['a', 'b', 'c']) agents.set(id, await relay.enroll(id));
}, 30_000);
afterAll(async () => {
  await relay?.close();
  await authority?.close();
});

describe('capacity figures', () => {
  it('/readyz: configured, used, remaining and the named-source count; a full tenant stays ready', async () => {
    expect((await claim('a')).status).toBe(200);
    expect((await claim('b')).status).toBe(200);
    const res = await call<{ status: string; capacity: Record<string, unknown> }>(relay.url, 'GET', '/readyz');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ready');
    const figures = { configured: 2, used: 2, remaining: 0, sources_limit: 400, named_source_count: 2 };
    expect(res.body.capacity.default).toEqual(figures);
    // the rows name agents: an administrator (admin or auditor) of the tenant sees them
    const rows = [
      { agent_id: 'a', edge_agent_id: 'edge', durable: 'src_a', created_at: expect.any(String) },
      { agent_id: 'b', edge_agent_id: 'edge', durable: 'src_b', created_at: expect.any(String) },
    ];
    for (const kind of ['admin', 'auditor'] as const) {
      const asAdmin = await call<{ capacity: Record<string, unknown> }>(relay.url, 'GET', '/readyz', undefined, {
        authorization: `Bearer ${await authority.token(kind)}`,
      });
      expect(asAdmin.status).toBe(200);
      expect(asAdmin.body.capacity.default).toEqual({ ...figures, named_sources: rows });
    }
    // a token that is no administrator's, or none that verifies, is refused rather than ignored
    const member = await call(relay.url, 'GET', '/readyz', undefined, {
      authorization: `Bearer ${await authority.token('member')}`,
    });
    expect(member.status).toBe(403);
    expect(member.body).toMatchObject({ error: 'insufficient_scope' });
    const agentToken = await call(relay.url, 'GET', '/readyz', undefined, edge.auth);
    expect(agentToken.status).toBe(401);
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
