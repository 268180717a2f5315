/** Test helpers: temp homes and in-process daemons with the file vault (no OS keyring). */
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
