/**
 * `svc-relay nats reconcile-source-capacity` when the message bus cannot be reached: one
 * line with `bus_unavailable` that says which bus and what to do, not a bare
 * "connection refused (internal_error)" or a file error of the bus's internals.
 */
import { tempDir } from '@svc/test-harness';
import { runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { describe, expect, it } from 'vitest';

async function reconcile(dataDir: string, deploymentId: string, extra: string[] = []) {
  const r = await runRelayCli(
    ['nats', 'reconcile-source-capacity', '--data-dir', dataDir, '--deployment-id', deploymentId, ...extra],
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
    expect(r.lines[0]).toMatch(/^svc-relay: error: .*--nats-url.* \(bus_unavailable\)$/);
    expect(r.lines[0]).not.toMatch(/ENOENT/);
    expect(r.code).toBe(1);
  });

  it('--json: the error object on stdout', async () => {
    const dataDir = tempDir('svc-relay-reconcile-');
    const r = await reconcile(dataDir, await init(dataDir), ['--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: 'bus_unavailable' });
  });
});
