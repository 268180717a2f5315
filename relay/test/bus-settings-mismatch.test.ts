/**
 * An instance that joins a shared bus with other stream settings than the running ones
 * (here fewer replicas) and cannot apply them leaves the tenant's account as the bus held
 * it. It used to leave its own, smaller storage limit behind as it exited, and the running
 * instances' writes (attachments first) were then refused as storage full.
 */
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { type NatsCluster, startNatsCluster } from '@svc/test-harness/nats-cluster';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bus } from '../src/bus/index.js';
import { connectWithCreds, listAccounts, lookupAccountJwt } from '../src/bus/system-client.js';

const MiB = 1024 * 1024;
const logger = pino({ level: 'silent' });

let cluster: NatsCluster;
beforeAll(async () => {
  cluster = await startNatsCluster({ size: 3 });
  await cluster.ready();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

describe('an instance whose settings the shared bus cannot take', () => {
  it('fails naming the settings to align, and leaves the account as the bus held it', async () => {
    const dataDir = join(tempDir('svc-bus-mismatch-'), 'a');
    const options = (streamReplicas: number, dir: string): Parameters<typeof Bus.start>[0] => ({
      dataDir: dir,
      tenants: ['acme'],
      logger,
      natsUrl: cluster.url,
      operatorSeedFile: cluster.operatorSeedFile,
      systemCredsFile: cluster.systemCredsFile,
      streamReplicas,
      tenantLimits: { maxBytes: 64 * MiB, maxBlobBytes: 64 * MiB },
    });
    const running = await Bus.start(options(3, dataDir));
    const sys = await connectWithCreds(cluster.url, await readFile(cluster.systemCredsFile, 'utf8'), 'test-system', {
      timeoutMs: 5000,
    });
    try {
      type Claims = { name: string; nats: { limits: { disk_storage: number } } };
      const claimsOf = async (account: string) => {
        const jwt = (await lookupAccountJwt(sys, account, 5000)) ?? '';
        return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString() || '{}') as Claims;
      };
      let account: string | undefined;
      for (const a of await listAccounts(sys, 5000))
        if ((await claimsOf(a).catch(() => undefined))?.name === 'acme') account = a;
      expect(account).toBeDefined();
      const diskStorage = async () => (await claimsOf(account as string)).nats.limits.disk_storage;
      expect(await diskStorage()).toBe((2 * 64 + 64) * MiB * 3);

      // a second instance on a copy of the data dir (the same keys), replicas left at 1
      const other = join(tempDir('svc-bus-mismatch-'), 'b');
      await cp(dataDir, other, { recursive: true });
      await expect(Bus.start(options(1, other))).rejects.toThrow(
        /every relay instance on this bus the same SVC_RELAY_STREAM_REPLICAS and SVC_RELAY_TENANT_MAX_BYTES/,
      );
      expect(await diskStorage()).toBe((2 * 64 + 64) * MiB * 3);
    } finally {
      await sys.close();
      await running.close();
    }
  }, 120_000);
});
