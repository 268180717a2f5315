/**
 * @svc/daemon: `createDaemon(config)` → {start(), close()}. The daemon owns the vault, the
 * per-agent archives and relay sessions, and serves client/api.ts over HTTP on
 * $SVC_HOME/run/daemon.sock (mode 0600 in a 0700 directory).
 */
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AgentManager } from './agents/manager.js';
import { AgentStore } from './agents/store.js';
import { homeProblem } from './client/home.js';
import { localStackFiles } from './client/local-stack/server-config.js';
import { buildConfig, type DaemonConfig, sessionTiming } from './config/config.js';
import { readEnv } from './config/env.js';
import type { DaemonContext } from './context.js';
import { DeploymentService } from './deployments/service.js';
import { DeploymentStore } from './deployments/store.js';
import { DaemonError } from './errors.js';
import { EventBus } from './events.js';
import { LocalStackService } from './local-stack/service.js';
import { createLogger, subsystem } from './logger.js';
import { homePaths } from './paths.js';
import { buildApp } from './server/app.js';
import { acquireInstanceLock, type InstanceLock } from './server/lock.js';
import { keepStatusLineFile, type StatusLineFile } from './status-line-file.js';
import { openVault } from './vault/index.js';

export { buildConfig, DAEMON_VERSION, type DaemonConfig } from './config/config.js';
export { readEnv } from './config/env.js';
export { DaemonError } from './errors.js';
export { homePaths } from './paths.js';
/** The file vault and an agent's identity seed in it (tests that act as the agent outside its daemon). */
export { FileVault, loadSeed } from './vault/index.js';
export const PACKAGE = '@svc/daemon';

export interface Daemon {
  readonly config: DaemonConfig;
  /** takes the home's lock, opens vault and agents, listens on the socket */
  start(): Promise<void>;
  /** stops sessions, closes the socket and archives, releases the lock; idempotent */
  close(): Promise<void>;
  /** resolves when the daemon has closed (after close(), SIGTERM or POST /v1/shutdown) */
  readonly closed: Promise<void>;
}

/** Config from the environment (read once) with overrides. */
export function configFromEnv(overrides: Partial<DaemonConfig> = {}, env = process.env): DaemonConfig {
  return buildConfig(readEnv(env), overrides);
}

export function createDaemon(config: DaemonConfig): Daemon {
  const paths = homePaths(config.home);
  let lock: InstanceLock | undefined;
  let app: FastifyInstance | undefined;
  let agents: AgentManager | undefined;
  let localStack: LocalStackService | undefined;
  let log: Logger | undefined;
  let statusLine: StatusLineFile | undefined;
  let closing: Promise<void> | undefined;
  const closers = new Set<() => void>();
  let resolveClosed: () => void = () => undefined;
  const closed = new Promise<void>((r) => {
    resolveClosed = r;
  });

  const close = (): Promise<void> => {
    closing ??= (async () => {
      // the status line goes first: from here on the daemon is going down
      statusLine?.remove();
      // order: end event streams and sessions (waking long-polls), then the server, then the archives
      for (const fn of [...closers]) fn();
      await localStack?.stop().catch(() => undefined);
      await agents?.stopAll().catch(() => undefined);
      await app?.close().catch(() => undefined);
      agents?.closeArchives();
      if (lock) rmSync(paths.socket, { force: true });
      lock?.release();
      log?.info('daemon stopped');
      resolveClosed();
    })();
    return closing;
  };

  return {
    config,
    closed,
    close,
    async start() {
      // before anything is created: a home under /proc made mkdirSync never return
      const problem = homeProblem(config.home);
      if (problem) throw new DaemonError('config_invalid', problem);
      mkdirSync(config.home, { recursive: true, mode: 0o700 });
      mkdirSync(paths.runDir, { recursive: true, mode: 0o700 });
      chmodSync(paths.runDir, 0o700);
      lock = await acquireInstanceLock(paths.lockFile, paths.socket);
      try {
        log = createLogger({
          level: config.logLevel,
          file: paths.logFile,
          dir: paths.logsDir,
          stderr: config.logToStderr,
        });
        const agentStore = new AgentStore(paths.agentsDir);
        const vault = openVault({
          home: config.home,
          file: paths.vaultFile,
          passphrase: config.vaultPassphrase,
          backend: config.vaultBackend,
          logger: subsystem(log, 'daemon:vault'),
          hasAgents: agentStore.any(),
        });
        const events = new EventBus();
        const deploymentStore = new DeploymentStore(paths.deploymentsDir);
        agents = new AgentManager({
          store: agentStore,
          deployments: deploymentStore,
          vault,
          events,
          log: subsystem(log, 'daemon:session'),
          timing: sessionTiming(config),
        });
        localStack = new LocalStackService(
          localStackFiles(paths.runDir),
          agents,
          subsystem(log, 'daemon:local-stack'),
          {
            renewShare: config.uplinkRenewShare,
          },
        );
        const ctx: DaemonContext = {
          config,
          paths,
          log,
          vault,
          deployments: new DeploymentService(deploymentStore, subsystem(log, 'daemon:deployments'), (name) =>
            agentStore
              .list()
              .filter((a) => a.deployment === name)
              .map((a) => a.name),
          ),
          agents,
          events,
          localStack,
          startedAt: new Date().toISOString(),
          requestShutdown: () => void close(),
          onClose: (fn) => {
            closers.add(fn);
            return () => closers.delete(fn);
          },
        };
        app = buildApp(ctx);
        const lineFile = keepStatusLineFile({ path: paths.statusLine, agents, events, log });
        statusLine = lineFile;
        // agents added or removed, messages acknowledged (POST ack, GET check?ack=1): all come
        // as API calls that change something; plain reads do not, so they skip the count per
        // agent. onSend, before the answer leaves: a caller that reads the line next sees it
        app.addHook('onSend', async (request, _reply, payload) => {
          if (request.method !== 'GET' || (request.query as { ack?: string }).ack !== undefined) lineFile.refresh();
          return payload;
        });
        await app.listen({ path: paths.socket });
        chmodSync(paths.socket, 0o600);
        agents.startAll();
        lineFile.refresh();
        log.info({ pid: process.pid, home: config.home, vault: vault.kind }, 'daemon started');
      } catch (err) {
        await close();
        throw err;
      }
    },
  };
}
