/** Test helpers: temp homes and in-process daemons with the file vault (no OS keyring). */
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { buildConfig, createDaemon, type Daemon, type DaemonConfig } from '@svc/daemon';
import { DaemonClient } from '@svc/daemon/client';
import { tempDir } from './index.js';

export const tempHome = (prefix = 'svc-daemon-test-'): string => tempDir(prefix);

/** The trust bundle a relay (a process or in-process) wrote into its data directory. */
export const relayTrustBundle = (relay: { dataDir: string }): string =>
  readFileSync(join(relay.dataDir, 'deployment', 'trust-bundle.json'), 'utf8');

/** Trusts the relay's deployment, named `dev`, in each daemon (svc deployment fetch with the relay's bundle). */
export async function trustRelay(relay: { url: string; dataDir: string }, ...daemons: TestDaemon[]): Promise<void> {
  const bundle = relayTrustBundle(relay);
  for (const d of daemons) await d.client.fetchDeployment({ url: relay.url, trust_bundle: bundle, name: 'dev' });
}

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

/** What a test does to a local agent's files once it is registered. */
/**
 * archive-page-damaged: the archive opens, but its last page (an index's) is garbage, as a
 * failing disk leaves it: only an integrity check finds it.
 */
export type AgentFiles = 'ok' | 'archive-newer' | 'archive-damaged' | 'archive-page-damaged' | 'config-damaged';

/** Overwrites the header of the last page of the SQLite file at `file` (closed, its WAL checkpointed). */
export function damageLastPage(file: string): void {
  const bytes = readFileSync(file);
  const size = bytes.readUInt16BE(16) === 1 ? 65_536 : bytes.readUInt16BE(16);
  const fd = openSync(file, 'r+');
  try {
    // a leaf page claiming five cells whose pointers all lie outside it
    writeSync(fd, Buffer.from([0x0d, 0, 0, 0, 5, 0x0f, 0xff, 0]), 0, 8, bytes.length - size);
  } finally {
    closeSync(fd);
  }
}

/** A file of local agent `name` in `home`. */
export const agentFile = (home: string, name: string, file: 'archive.db' | 'agent.json'): string =>
  join(home, 'agents', name, file);

/**
 * A home with these local agents (registered by a daemon, closed again), then the files of
 * some spoiled: an archive moved to a schema one past this svc's, as a later svc would leave
 * it (the SQLite header's user_version, at byte 60, big-endian), or overwritten with bytes
 * that are no database; an agent.json cut short. A daemon started on it keeps those agents
 * out of service.
 */
export async function homeWithAgents(prefix: string, agents: Record<string, AgentFiles>): Promise<string> {
  const home = tempHome(prefix);
  const first = await startDaemon(home);
  for (const name of Object.keys(agents)) await first.client.registerLocal({ name });
  await first.daemon.close();
  for (const [name, files] of Object.entries(agents)) {
    const archive = agentFile(home, name, 'archive.db');
    if (files === 'config-damaged') writeFileSync(agentFile(home, name, 'agent.json'), `{"name": "${name}", "agent_`);
    if (files === 'archive-damaged') writeFileSync(archive, 'not a database, just some bytes '.repeat(200));
    if (files === 'archive-page-damaged') damageLastPage(archive);
    if (files === 'archive-newer') {
      const version = Buffer.alloc(4);
      version.writeUInt32BE(readFileSync(archive).readUInt32BE(60) + 1);
      const fd = openSync(archive, 'r+');
      try {
        writeSync(fd, version, 0, 4, 60);
      } finally {
        closeSync(fd);
      }
    }
  }
  return home;
}
