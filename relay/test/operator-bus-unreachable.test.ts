/**
 * `svc-relay nats reconcile-source-capacity` when the message bus cannot be reached: one
 * line with `bus_unavailable` that says which bus and what to do, not a bare
 * "connection refused (internal_error)" or a file error of the bus's internals.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { startNatsCluster } from '@svc/test-harness/nats-cluster';
import { runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { describe, expect, it } from 'vitest';

/** Told the data dir alone, as grant and agent revoke are (the deployment id is only a guard). */
async function reconcile(dataDir: string, _deploymentId: string, extra: string[] = []) {
  const r = await runRelayCli(
    ['nats', 'reconcile-source-capacity', '--data-dir', dataDir, ...extra],
    {},
    { bare: true },
  );
  return { code: r.code, stdout: r.stdout, lines: r.stderr.trimEnd().split('\n') };
}

async function init(dataDir: string): Promise<string> {
  const r = await runRelayCli(['deployment', 'init', '--data-dir', dataDir, '--json'], {}, { bare: true });
  return (JSON.parse(r.stdout) as { deployment_id: string }).deployment_id;
}

describe('reconcile-source-capacity without a reachable bus', () => {
  it('the relay of the data dir is stopped: bus_unavailable naming the URL and --nats-url', async () => {
    const dataDir = tempDir('svc-relay-reconcile-');
    const deploymentId = await init(dataDir);
    const relay = await spawnRelay({ dataDir, init: false });
    await relay.stop();
    const r = await reconcile(dataDir, deploymentId);
    expect(r.lines, r.lines.join('\n')).toHaveLength(1);
    expect(r.lines[0]).toMatch(
      /^svc-relay: error: cannot reach the message bus at nats:\/\/127\.0\.0\.1:\d+ .*--nats-url.* \(bus_unavailable\)$/,
    );
    expect(r.code).toBe(1);
  }, 60_000);

  it('no relay ever ran on the data dir: bus_unavailable saying so, not a missing-file error', async () => {
    const dataDir = tempDir('svc-relay-reconcile-');
    const r = await reconcile(dataDir, await init(dataDir));
    expect(r.lines, r.lines.join('\n')).toHaveLength(1);
    expect(r.lines[0]).toMatch(
      /^svc-relay: error: no managed nats-server in .* \(no relay has run on it\).*--nats-url.* \(bus_unavailable\)$/,
    );
    expect(r.lines[0]).not.toMatch(/ENOENT/);
    expect(r.code).toBe(1);
  });

  it('--json: the error object on stdout', async () => {
    const dataDir = tempDir('svc-relay-reconcile-');
    const r = await reconcile(dataDir, await init(dataDir), ['--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: 'bus_unavailable' });
  });
});

describe('reconcile-source-capacity on the data dir of a relay on an external NATS', () => {
  it('finds the bus from the data dir alone; a data dir that does not record its URL says it is external, and which flag gives it', async () => {
    const nats = await startNatsCluster({ size: 1 });
    try {
      const dataDir = tempDir('svc-relay-reconcile-ext-');
      const relay = await spawnRelay({ dataDir, env: nats.relayEnv() });
      await relay.stop();
      const r = await reconcile(dataDir, '', ['--json']);
      expect(r.code, r.lines.join('\n')).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ applied: false, disagreements: [] });

      // as a relay from before the URL was recorded left it
      const settings = join(dataDir, 'relay-settings.json');
      const { nats_url: _, ...older } = JSON.parse(readFileSync(settings, 'utf8')) as Record<string, unknown>;
      writeFileSync(settings, JSON.stringify(older));
      const old = await reconcile(dataDir, '');
      expect(old.lines, old.lines.join('\n')).toHaveLength(1);
      expect(old.lines[0]).toBe(
        `svc-relay: error: the relay on ${dataDir} uses an external NATS, whose URL the data dir does not record; give it with --nats-url or SVC_RELAY_NATS_URL (the tenant credentials come from the data dir) (bus_unavailable)`,
      );
      expect((await reconcile(dataDir, '', ['--nats-url', nats.url])).code).toBe(0);
    } finally {
      await nats.stop();
    }
  }, 90_000);
});
