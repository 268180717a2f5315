/** Test helpers: temp homes and in-process daemons with the file vault (no OS keyring). */
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { buildConfig, createDaemon, type Daemon, type DaemonConfig } from '@svc/daemon';
import { DaemonClient } from '@svc/daemon/client';
import { tempDir } from './index.js';

export const tempHome = (prefix = 'svc-daemon-test-'): string => tempDir(prefix);

export interface TestDaemon {
  daemon: Daemon;
  client: DaemonClient;
  home: string;
}

export async function startDaemon(home = tempHome(), overrides: Partial<DaemonConfig> = {}): Promise<TestDaemon> {
  const daemon = createDaemon(
    buildConfig(
      {},
      {
        home,
        vaultBackend: 'file',
        vaultPassphrase: 'test passphrase',
        logLevel: 'debug',
        reconnectMinMs: 100,
        reconnectMaxMs: 500,
        receiptsPollMs: 200,
        ...overrides,
      },
    ),
  );
  await daemon.start();
  return { daemon, client: new DaemonClient({ home }), home };
}

/**
 * A home whose daemon keeps two of its three local agents out of service: ann in service,
 * yan's agent.json cut short, zed's archive moved to a schema one past this svc's (as a
 * later svc would leave it: the SQLite header's user_version, at byte 60, big-endian).
 */
export async function homeWithAgentsOutOfService(
  prefix: string,
): Promise<{ home: string; config: string; file: string }> {
  const home = tempHome(prefix);
  const first = await startDaemon(home);
  await first.client.registerLocal({ name: 'ann' });
  await first.client.registerLocal({ name: 'yan' });
  await first.client.registerLocal({ name: 'zed' });
  await first.daemon.close();
  const config = join(home, 'agents', 'yan', 'agent.json');
  writeFileSync(config, '{"name": "yan", "agent_');
  const file = join(home, 'agents', 'zed', 'archive.db');
  const header = readFileSync(file).subarray(0, 100);
  const fd = openSync(file, 'r+');
  try {
    const version = Buffer.alloc(4);
    version.writeUInt32BE(header.readUInt32BE(60) + 1);
    writeSync(fd, version, 0, 4, 60);
  } finally {
    closeSync(fd);
  }
  return { home, config, file };
}
