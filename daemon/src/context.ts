/** Everything a route needs, built once at start and handed to the routes. */
import type { Logger } from 'pino';
import type { AgentManager } from './agents/manager.js';
import type { DaemonConfig } from './config/config.js';
import type { DeploymentService } from './deployments/service.js';
import type { EventBus } from './events.js';
import type { LocalStackService } from './local-stack/service.js';
import type { HomePaths } from './paths.js';
import type { Vault } from './vault/index.js';

export interface DaemonContext {
  config: DaemonConfig;
  paths: HomePaths;
  log: Logger;
  vault: Vault;
  deployments: DeploymentService;
  agents: AgentManager;
  events: EventBus;
  /** the local nats-server of `svc start` and its uplink */
  localStack: LocalStackService;
  startedAt: string;
  /** asks the daemon to stop (POST /v1/shutdown) */
  requestShutdown: () => void;
  /** registers a hook run when the daemon closes (open event streams); returns its remover */
  onClose: (fn: () => void) => () => void;
}
