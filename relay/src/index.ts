/**
 * The relay as a library: createRelay(config) → start() / close(). The `svc-relay`
 * binary only parses arguments and calls this; tests build the same object.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { createAdminTokenVerifier } from './auth/admin-token.js';
import { Bus } from './bus/index.js';
import type { RelayConfig } from './config/config.js';
import type { RelayContext } from './context.js';
import { hasDeployment, initDeployment, loadDeployment } from './deployment/deployment.js';
import { Ledger } from './ledger/ledger.js';
import { createLogger, subsystem } from './logger.js';
import type { TypedApp } from './routes/types.js';
import { runPendingCleanups } from './services/revocation.js';
import { createWebhookDispatcher } from './webhooks/index.js';

export { RELAY_VERSION } from './app.js';
export { buildConfig, type RelayConfig } from './config/config.js';
export { mergeSettings, SETTINGS, settingsFromEnv, settingsFromFile } from './config/env.js';

export interface Relay {
  readonly context: RelayContext;
  readonly app: TypedApp;
  /** The address the HTTP server listens on (after start). */
  readonly url: string;
  close(): Promise<void>;
}

export interface CreateRelayOptions {
  logger?: Logger;
  /** Create a deployment in the data dir when there is none (`svc-relay dev`). */
  autoInitDeployment?: boolean;
  /** Period of the background revocation-cleanup loop. */
  cleanupIntervalMs?: number;
  /** The relay's clock (tests shift it; rate limits and expiries follow it). */
  now?: () => number;
}

export const ledgerPath = (dataDir: string): string => join(dataDir, 'ledger.db');

/** Opens the pieces that do not need the network: deployment and ledger (used by operator commands too). */
export async function openLocalState(config: RelayConfig, autoInit = false) {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const deploymentOptions = { publicUrl: config.publicUrl, tenants: config.tenants, deploymentId: config.deploymentId };
  const deployment =
    autoInit && !hasDeployment(config.dataDir)
      ? await initDeployment(config.dataDir, deploymentOptions)
      : await loadDeployment(config.dataDir, deploymentOptions);
  const ledger = Ledger.open(ledgerPath(config.dataDir));
  return { deployment, ledger };
}

/**
 * What the local operator commands (`grant`, `agent revoke`) open: the deployment as it is
 * on disk (never re-signed: the running relay owns its document) and the ledger. The
 * config carries the settings the relay on this data dir recorded (local-settings.ts).
 */
export async function openOperatorState(config: RelayConfig) {
  const deployment = await loadDeployment(config.dataDir, {
    publicUrl: config.publicUrl,
    tenants: config.tenants,
    resign: false,
  });
  const ledger = Ledger.open(ledgerPath(config.dataDir));
  return { deployment, ledger };
}

export async function startRelay(config: RelayConfig, options: CreateRelayOptions = {}): Promise<Relay> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const { deployment, ledger } = await openLocalState(config, options.autoInitDeployment);
  let bus: Bus | undefined;
  try {
    bus = await Bus.start({
      dataDir: config.dataDir,
      tenants: config.tenants,
      logger: subsystem(logger, 'relay:bus'),
      natsUrl: config.nats.url,
      operatorSeedFile: config.nats.operatorSeedFile,
      systemCredsFile: config.nats.systemCredsFile,
      tenantLimits: {
        maxMessages: config.limits.tenantMaxMessages,
        maxBytes: config.limits.tenantMaxBytes,
        maxBlobBytes: config.limits.tenantMaxBlobBytes,
      },
    });
    const context: RelayContext = {
      config,
      deployment,
      ledger,
      bus,
      adminVerifier: config.authority
        ? createAdminTokenVerifier(
            {
              issuer: config.authority.issuer,
              audience: config.authority.audience,
              clientId: config.authority.clientId,
              jwksUrl: config.authority.jwksUrl,
              caPem: config.authority.caPem,
              deploymentId: deployment.deploymentId,
              tenants: config.tenants,
            },
            subsystem(logger, 'relay:auth'),
          )
        : undefined,
      logger,
      now: options.now ?? Date.now,
    };
    const app = await buildApp(context);
    const url = await app.listen({ host: config.host, port: config.port });
    logger.info({ url, deployment_id: deployment.deploymentId, tenants: config.tenants }, 'relay listening');
    // Webhook deliveries queued in the ledger, including those left by a previous run.
    const webhooks = createWebhookDispatcher(context);
    webhooks?.start();

    let cleaning = false;
    const timer = setInterval(() => {
      if (cleaning || !ledger.isOpen) return;
      cleaning = true;
      try {
        ledger.pruneChallenges(context.now());
      } catch {
        // ledger trouble is reported by /readyz and the routes
      }
      runPendingCleanups(context)
        .catch(() => undefined)
        .finally(() => {
          cleaning = false;
        });
    }, options.cleanupIntervalMs ?? 5000);
    timer.unref();

    let closing: Promise<void> | undefined;
    return {
      context,
      app,
      url,
      close() {
        closing ??= (async () => {
          clearInterval(timer);
          await webhooks?.stop();
          await app.close();
          await bus?.close();
          ledger.close();
          logger.info('relay stopped');
        })();
        return closing;
      },
    };
  } catch (err) {
    await bus?.close().catch(() => undefined);
    ledger.close();
    throw err;
  }
}
