/** Test helpers: temp homes and in-process daemons with the file vault (no OS keyring). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DaemonClient } from '../src/client/index.js';
import { buildConfig, createDaemon, type Daemon, type DaemonConfig } from '../src/index.js';

export const tempHome = (prefix = 'svc-daemon-test-'): string => mkdtempSync(join(tmpdir(), prefix));

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

export async function until<T>(
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
