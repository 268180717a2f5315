/**
 * Real nats-servers for scale-out tests: one server or a cluster on loopback, in operator
 * mode with the full resolver and JetStream on every node (the configuration the relay
 * writes with writeNatsClusterConfig), and the settings a relay needs to use it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { freePort, tempDir, until } from './index.js';

export interface NatsNode {
  name: string;
  /** nats://127.0.0.1:port */
  url: string;
  monitorUrl: string;
  configFile: string;
  logFile: string;
  readonly running: boolean;
  /** Sends the signal (default SIGKILL: a crash) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same configuration (same ports, same store). */
  start(): Promise<void>;
}

export interface NatsCluster {
  dir: string;
  nodes: NatsNode[];
  /** every node's client URL, comma-separated: SVC_RELAY_NATS_URL */
  url: string;
  operatorSeedFile: string;
  systemCredsFile: string;
  /** The relay settings for this bus (external NATS, operator credentials, replicas). */
  relayEnv(replicas?: number): Record<string, string>;
  /** Until every running node sees a JetStream meta leader and all its peers. */
  ready(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `size` nats-servers (routes between them when more than one) and waits until JetStream is ready. */
export async function startNatsCluster(opts: { size?: number; dir?: string } = {}): Promise<NatsCluster> {
  const size = opts.size ?? 3;
  const dir = opts.dir ?? tempDir('svc-nats-cluster-');
  const { writeNatsClusterConfig } = await import('@svc/relay');
  const specs = [];
  for (let i = 1; i <= size; i++) {
    specs.push({ name: `n${i}`, port: await freePort(), clusterPort: await freePort(), monitorPort: await freePort() });
  }
  const written = await writeNatsClusterConfig(dir, specs);
  const nodes = specs.map((spec, i) => natsNode(spec.name, spec.port, spec.monitorPort, written.configFiles[i] ?? ''));
  await Promise.all(nodes.map((n) => n.start()));
  const cluster: NatsCluster = {
    dir,
    nodes,
    url: written.url,
    operatorSeedFile: written.operatorSeedFile,
    systemCredsFile: written.systemCredsFile,
    relayEnv: (replicas = size) => ({
      SVC_RELAY_NATS_URL: written.url,
      SVC_RELAY_NATS_OPERATOR_SEED_FILE: written.operatorSeedFile,
      SVC_RELAY_NATS_SYSTEM_CREDS_FILE: written.systemCredsFile,
      SVC_RELAY_STREAM_REPLICAS: String(replicas),
    }),
    async ready(timeoutMs = 30_000) {
      const up = nodes.filter((n) => n.running);
      await until(
        async () => {
          for (const n of up) {
            const jsz = await fetchJson(`${n.monitorUrl}/jsz`);
            const meta = jsz?.meta_cluster as { leader?: string; cluster_size?: number } | undefined;
            if (size > 1 && (!meta?.leader || (meta.cluster_size ?? 0) < size)) return false;
            if (size === 1 && !jsz?.config) return false;
          }
          return true;
        },
        timeoutMs,
        'the NATS cluster to elect a JetStream meta leader',
        100,
      );
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop('SIGTERM')));
    },
  };
  await cluster.ready();
  return cluster;
}

async function fetchJson(url: string): Promise<Record<string, unknown> | undefined> {
  try {
    const r = await fetch(url);
    return r.ok ? ((await r.json()) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One nats-server on a configuration file (e.g. the ones docs/scale-out/ ships), from `cwd`
 * (relative paths in the file are relative to it); started by `start()`.
 */
export function natsNode(name: string, port: number, monitorPort: number, configFile: string, cwd?: string): NatsNode {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const logFile = join(cwd ?? join(configFile, '..'), `${name}.log`);
  const monitorUrl = `http://127.0.0.1:${monitorPort}`;
  return {
    name,
    url: `nats://127.0.0.1:${port}`,
    monitorUrl,
    configFile,
    logFile,
    get running() {
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    },
    async start() {
      const c = spawn('nats-server', ['-c', configFile], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
      c.stderr?.pipe(createWriteStream(logFile, { flags: 'a' }));
      child = c;
      exited = new Promise((resolve) => c.once('exit', () => resolve()));
      await until(
        async () => (await fetchJson(`${monitorUrl}/healthz`)) !== undefined,
        15_000,
        `${name} to listen`,
        50,
      );
    },
    async stop(signal: NodeJS.Signals = 'SIGKILL') {
      if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
