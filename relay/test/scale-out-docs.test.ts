/**
 * The configuration files docs/scale-out.md tells operators to start from: three
 * nats-server nodes and two relay instances, used as shipped except for the port numbers
 * (free ones instead of 4222… on a shared test machine), run the way the walkthrough does.
 */
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, tempDir, until } from '@svc/test-harness';
import { type NatsNode, natsNode } from '@svc/test-harness/nats-cluster';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, expect, it } from 'vitest';

const SHIPPED = fileURLToPath(new URL('../../docs/scale-out', import.meta.url));
const PORTS = [4222, 4223, 4224, 6222, 6223, 6224, 8222, 8223, 8224, 8801, 8802];

const nodes: NatsNode[] = [];
const relays: RelayProcess[] = [];

afterAll(async () => {
  for (const r of relays) await r.stop();
  await Promise.all(nodes.map((n) => n.stop('SIGTERM')));
});

/** KEY=VALUE lines of an env file, comments and blank lines skipped (what `set -a; .` reads). */
function envFile(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m?.[1] !== undefined && m[2] !== undefined) env[m[1]] = m[2];
  }
  return env;
}

it('the shipped NATS cluster and relay files start two relays on three nodes with replicas 3', async () => {
  const dir = tempDir('svc-scale-out-docs-');
  cpSync(SHIPPED, dir, { recursive: true });
  const port = new Map<number, number>();
  for (const p of PORTS) port.set(p, await freePort());
  const files = [
    ...readdirSync(join(dir, 'nats')).map((f) => join(dir, 'nats', f)),
    ...readdirSync(join(dir, 'relay')).map((f) => join(dir, 'relay', f)),
  ];
  for (const f of files) {
    const text = readFileSync(f, 'utf8').replace(/\b(4222|4223|4224|6222|6223|6224|8222|8223|8224|8801|8802)\b/g, (p) =>
      String(port.get(Number(p))),
    );
    writeFileSync(f, text);
  }

  const init = await runRelayCli(['nats', 'operator-init', '--dir', 'nats'], {}, { cwd: dir, bare: true });
  expect(init.code).toBe(0);
  for (const [i, name] of ['n1', 'n2', 'n3'].entries()) {
    nodes.push(
      natsNode(name, port.get(4222 + i) as number, port.get(8222 + i) as number, join('nats', `${name}.conf`), dir),
    );
  }
  await Promise.all(nodes.map((n) => n.start()));
  await until(
    async () => (await fetch(`${nodes[0]?.monitorUrl}/healthz`)).ok,
    30_000,
    'JetStream to elect a meta leader',
    100,
  );

  // the deployment is created once; the second instance starts once the first has created
  // the tenant's streams (as the walkthrough waits), while the first still starts its HTTP side
  const envs = ['relay-1.env', 'relay-2.env'].map((file) => envFile(join(dir, 'relay', file)));
  const created = await runRelayCli(['deployment', 'init'], envs[0], { cwd: dir, bare: true });
  expect(created.code, created.stderr).toBe(0);
  const start = (i: number) =>
    spawnRelay({
      cwd: dir,
      dataDir: join(dir, 'relay-data'),
      port: port.get(8801 + i) as number,
      env: envs[i],
      init: false,
    });
  const first = start(0);
  first.catch(() => undefined); // awaited below
  await until(
    async () => {
      const r = await fetch(`${nodes[0]?.monitorUrl}/jsz?accounts=true&streams=true`).catch(() => undefined);
      const body = (await r?.json().catch(() => undefined)) as
        | { account_details?: Array<{ stream_detail?: Array<{ name: string }> }> }
        | undefined;
      const names = (body?.account_details ?? []).flatMap((a) => (a.stream_detail ?? []).map((s) => s.name));
      return names.includes('SVC_MSGS') && names.includes('SVC_ACKS');
    },
    60_000,
    "the first instance's streams",
    50,
  );
  const started = await Promise.allSettled([first, start(1)]);
  for (const s of started) if (s.status === 'fulfilled') relays.push(s.value);
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  for (const r of relays) expect((await fetch(`${r.url}/readyz`)).status).toBe(200);

  const jsz = (await (await fetch(`${nodes[0]?.monitorUrl}/jsz?accounts=true&streams=true&config=true`)).json()) as {
    account_details?: Array<{ stream_detail?: Array<{ name: string; config: { num_replicas: number } }> }>;
  };
  const streams = (jsz.account_details ?? []).flatMap((a) => a.stream_detail ?? []);
  expect(streams.map((s) => [s.name, s.config.num_replicas]).sort()).toEqual([
    ['SVC_ACKS', 3],
    ['SVC_MSGS', 3],
  ]);

  const grant = await runRelayCli(
    ['grant', '--data-dir', 'relay-data', '--agent-id', 'alice'],
    {},
    {
      cwd: dir,
      bare: true,
    },
  );
  expect(grant.code).toBe(0);
  expect(grant.stdout).toMatch(/^svce1\./);
}, 120_000);
