/**
 * The composition root: createRelay builds every part of the relay once (deployment,
 * ledger and its stores, bus, verifiers, messaging, key rules, webhook dispatcher, the
 * HTTP app) and hands them to the routes through one context. start() listens and runs
 * the background work; close() stops everything in order.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { createAdminTokenVerifier } from './auth/admin-token.js';
import { accessTokenVerifier } from './auth/agent-credentials.js';
import { BlobStore } from './blobs/blob-store.js';
import { acquireDataDirLock } from './bus/data-dir-lock.js';
import { Bus, STREAM_MAX_AGE_MS } from './bus/index.js';
import type { RelayConfig, WebhookTiming } from './config/config.js';
import type { RelayBase, RelayBus, RelayContext } from './context.js';
import { hasDeployment, initDeployment, loadDeployment, requireDeployment } from './deployment/deployment.js';
import type { LedgerLocation } from './ledger/database.js';
import { Ledger } from './ledger/ledger.js';
import { PostgresDatabase } from './ledger/postgres.js';
import { SqliteDatabase } from './ledger/sqlite.js';
import { createStores } from './ledger/stores.js';
import { createLogger, subsystem } from './logger.js';
import { BusInbox } from './messages/bus-inbox.js';
import type { TypedApp } from './routes/types.js';
import { KeyService } from './services/keys.js';
import { revokeTenantAccountUplinkUsers } from './services/leaf-creds.js';
import { Messaging } from './services/messages.js';
import { RevocationNews, runPendingCleanups } from './services/revocation.js';
import { TenantQueue } from './services/tenant-queue.js';
import { createWebhookDispatcher } from './webhooks/index.js';

export interface Relay {
  readonly context: RelayContext;
  /** Ready for `app.inject()` once createRelay returns; listening after start(). */
  readonly app: TypedApp;
  /** The address the HTTP server listens on (after start). */
  readonly url: string;
  /** Listens, and starts the webhook dispatcher and the revocation-cleanup loop. */
  start(): Promise<string>;
  close(): Promise<void>;
}

export interface RelayOverrides {
  logger?: Logger;
  /** Create a deployment in the data dir when there is none (`svc-relay dev`, tests). */
  autoInitDeployment?: boolean;
  /** Period of the background cleanup loop (spent challenges, blob usage, revocation cleanups). */
  cleanupIntervalMs?: number;
  /** The relay's clock (tests shift it; rate limits and expiries follow it). */
  now?: () => number;
  /** The webhook attempt schedule (tests make it tiny). */
  webhooks?: Partial<WebhookTiming>;
  /**
   * How long a send waits for JetStream to store an envelope before it answers 503
   * bus_unavailable (default 5000 ms; tests that kill the bus shorten it).
   */
  busPublishTimeoutMs?: number;
  /**
   * A bus instead of starting one from the configuration: route tests give a bus that is
   * down, so the message routes answer 503 bus_unavailable and revocations stay pending.
   */
  bus?: RelayBus;
  /** How long a request may take to arrive whole (default REQUEST_TIMEOUT_MS; tests shorten it). */
  requestTimeoutMs?: number;
  /** How long close() lets requests in progress finish (default SHUTDOWN_GRACE_MS; tests shorten it). */
  shutdownGraceMs?: number;
  /**
   * Checks that the relay can listen, before anything is set up in the data dir (its lock
   * first: a relay already on it is the better answer than its port): `svc-relay serve`
   * and `dev`, which listen next. A library caller that never listens leaves it out.
   */
  listenProbe?: () => Promise<void>;
}

/**
 * How long a stopping relay lets requests in progress finish before it closes their
 * connections. Long-polls and event streams end at once (Messaging.shutdown); what is left
 * is sends, acknowledgements and attachments under way. Without a bound, one client that
 * stalls an upload (or leaves half a body unsent after a refusal) held a stop for the whole
 * request timeout, 5 minutes, well past a service manager's own stop timeout.
 */
export const SHUTDOWN_GRACE_MS = 10_000;

export const ledgerPath = (dataDir: string): string => join(dataDir, 'ledger.db');

/**
 * How often (on the relay's clock) the cleanup loop deletes the blob_usage rows that no
 * longer count: they stop counting at the stream's max age (30 days), so within an hour of
 * it is soon enough, and the table is not scanned every few seconds.
 */
export const BLOB_USAGE_PRUNE_INTERVAL_MS = 60 * 60_000;

/** The configured ledger: PostgreSQL when a DSN file is set, else SQLite in the data dir. */
export const ledgerLocation = (config: Pick<RelayConfig, 'dataDir' | 'ledgerDsnFile'>): LedgerLocation =>
  config.ledgerDsnFile === undefined ? { sqlite: ledgerPath(config.dataDir) } : { dsnFile: config.ledgerDsnFile };

/** Opens the pieces that do not need the network: deployment and ledger (used by operator commands too). */
export async function openLocalState(config: RelayConfig, autoInit = false) {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const deploymentOptions = {
    publicUrl: config.publicUrl,
    leafUrl: leafUrlOf(config),
    tenants: config.tenants,
    deploymentId: config.deploymentId,
  };
  const deployment =
    autoInit && !hasDeployment(config.dataDir)
      ? await initDeployment(config.dataDir, deploymentOptions)
      : await loadDeployment(config.dataDir, deploymentOptions);
  const ledger = await ledgerOf(config, deployment.deploymentId);
  return { deployment, ledger };
}

/** The configured ledger, opened and tied to the deployment (refused when it is another's). */
const ledgerOf = (config: Pick<RelayConfig, 'dataDir' | 'ledgerDsnFile'>, deploymentId: string): Promise<Ledger> =>
  openLedger(
    ledgerLocation(config),
    deploymentId,
    config.ledgerDsnFile === undefined ? ledgerPath(config.dataDir) : `named in ${config.ledgerDsnFile}`,
  );

/** A ledger opened and tied to the deployment (`where`: how it was named, for the refusal). */
export async function openLedger(location: LedgerLocation, deploymentId: string, where: string): Promise<Ledger> {
  const ledger = await Ledger.open(location);
  try {
    await ledger.claimFor(deploymentId, where);
  } catch (err) {
    await ledger.close().catch(() => undefined);
    throw err;
  }
  return ledger;
}

/**
 * The leaf URL edges dial, as the bus advertises it: the advertised address, else (a
 * managed nats-server only) its leaf listen address; none without a leaf listener.
 */
export function leafUrlOf(config: RelayConfig): string | null {
  const { url, leafListen, leafAdvertise } = config.nats;
  const address =
    leafAdvertise ?? (url === undefined && leafListen ? `${leafListen.host}:${leafListen.port}` : undefined);
  return address ? `nats-leaf://${address}` : null;
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
  const ledger = await ledgerOf(config, deployment.deploymentId);
  return { deployment, ledger };
}

function startBus(config: RelayConfig, logger: Logger, now: () => number): Promise<Bus> {
  return Bus.start({
    now,
    dataDir: config.dataDir,
    tenants: config.tenants,
    logger: subsystem(logger, 'relay:bus'),
    natsUrl: config.nats.url,
    natsServerBin: config.nats.serverBin,
    ownPorts: [config.port],
    operatorSeedFile: config.nats.operatorSeedFile,
    systemCredsFile: config.nats.systemCredsFile,
    streamReplicas: config.nats.streamReplicas,
    leafnodes: config.nats.leafListen && { ...config.nats.leafListen, advertise: config.nats.leafAdvertise },
    leafAdvertise: config.nats.leafAdvertise,
    tenantLimits: {
      maxMessages: config.limits.tenantMaxMessages,
      maxBytes: config.limits.tenantMaxBytes,
      maxBlobBytes: config.limits.tenantMaxBlobBytes,
      consumers: config.limits.tenantMaxConsumers,
    },
  });
}

export async function createRelay(baseConfig: RelayConfig, overrides: RelayOverrides = {}): Promise<Relay> {
  const config: RelayConfig = overrides.webhooks
    ? { ...baseConfig, webhooks: { ...baseConfig.webhooks, ...overrides.webhooks } }
    : baseConfig;
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const now = overrides.now ?? Date.now;
  if (config.retiredSettings.length > 0) {
    logger.warn(
      { settings: config.retiredSettings },
      `${config.retiredSettings.join(', ')}: no longer used (sign-in challenges are not stored); remove from the configuration`,
    );
  }
  for (const warning of config.startWarnings) logger.warn(warning);
  // a data dir without a deployment is refused before the lock would create it
  if (!overrides.autoInitDeployment) requireDeployment(config.dataDir);
  // A relay that runs its own nats-server holds the data dir alone, taken before anything in
  // it is read or written; relays on an external NATS share theirs (several instances).
  const lock = overrides.bus || config.nats.url ? undefined : await acquireDataDirLock(config.dataDir);
  const { deployment, ledger } = await (async () => {
    await overrides.listenProbe?.();
    return openLocalState(config, overrides.autoInitDeployment);
  })().catch((err: unknown) => {
    lock?.release();
    throw err;
  });
  if (ledger.sql instanceof PostgresDatabase) {
    // once per outage and once at its end: each failing request is only a 503 of its own
    const log = subsystem(logger, 'relay:ledger');
    let since = 0;
    ledger.sql.onAvailability({
      down: (reason) => {
        since = now();
        log.error({ reason }, 'the PostgreSQL ledger does not answer; requests get 503 ledger_closed until it does');
      },
      up: () => log.warn({ down_ms: now() - since }, 'the PostgreSQL ledger answers again'),
    });
  }
  let bus: RelayBus | undefined;
  try {
    bus = overrides.bus ?? (await startBus(config, logger, now));
    const base: RelayBase = {
      config,
      deployment,
      ledger,
      stores: createStores(ledger),
      soleInstance: lock !== undefined && ledger.sql.dialect === 'sqlite',
      bus,
      inbox: new BusInbox(bus, overrides.busPublishTimeoutMs),
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
      accessTokens: accessTokenVerifier(deployment.relayKey, config.publicUrl, now),
      logger,
      now,
      sourceClaims: new TenantQueue(),
    };
    const context: RelayContext = {
      ...base,
      messaging: new Messaging(base),
      keys: new KeyService(base),
      blobs: new BlobStore(bus, { released: (id) => base.stores.blobUsage.release(id) }),
    };
    const app = await buildApp(context, { requestTimeoutMs: overrides.requestTimeoutMs });
    await app.ready();
    // Webhook deliveries queued in the ledger, including those left by a previous run.
    const webhooks = createWebhookDispatcher(context);
    const openBus = bus;

    let url = '';
    let timer: NodeJS.Timeout | undefined;
    let closing: Promise<void> | undefined;
    return {
      context,
      app,
      get url() {
        return url;
      },
      async start() {
        url = await app.listen({ host: config.host, port: config.port });
        logger.info({ url, deployment_id: deployment.deploymentId, tenants: config.tenants }, 'relay listening');
        webhooks.start();
        // uplink creds an older relay minted in the tenant account: cut now, their edges renew
        void revokeTenantAccountUplinkUsers(context).catch((err: Error) =>
          logger.warn(
            { err: err.message },
            'uplink creds of an older relay not revoked yet; retried at the next start',
          ),
        );
        if (ledger.sql instanceof SqliteDatabase) ledger.sql.checkpointInBackground();
        let cleaning = false;
        // an offline revocation's streams end now, on every instance, not at their own check
        const news = new RevocationNews((row) => context.messaging.agentRevoked(row));
        let blobUsagePrunedAt = Number.NEGATIVE_INFINITY;
        // the rows of blobs the stream no longer holds, also of agents that stopped uploading
        const pruneBlobUsage = async () => {
          const now = context.now();
          if (now - blobUsagePrunedAt < BLOB_USAGE_PRUNE_INTERVAL_MS) return;
          const rows = await context.stores.blobUsage.prune(now - STREAM_MAX_AGE_MS);
          // only once it worked: a failed prune (the ledger busy or away) is tried at the next round
          blobUsagePrunedAt = now;
          if (rows > 0) logger.debug({ rows }, 'blob usage of blobs past the stream age pruned');
        };
        timer = setInterval(() => {
          if (cleaning || !ledger.isOpen) return;
          cleaning = true;
          // ledger trouble is reported by /readyz and the routes
          ledger
            .pruneChallenges(context.now())
            .catch(() => undefined)
            .then(pruneBlobUsage)
            .catch(() => undefined)
            .then(() => runPendingCleanups(context, news))
            .catch(() => undefined)
            .finally(() => {
              cleaning = false;
            });
        }, overrides.cleanupIntervalMs ?? 5000);
        timer.unref();
        return url;
      },
      close() {
        closing ??= (async () => {
          try {
            clearInterval(timer);
            await webhooks.stop();
            const graceMs = overrides.shutdownGraceMs ?? SHUTDOWN_GRACE_MS;
            const grace = setTimeout(() => {
              logger.warn(
                { grace_ms: graceMs },
                'requests still in progress at shutdown: their connections are closed',
              );
              app.server.closeAllConnections();
            }, graceMs);
            try {
              await app.close();
            } finally {
              clearTimeout(grace);
            }
            await openBus.close();
            await ledger.close();
          } finally {
            // a nats-server that did not stop still names this process, so the next start leaves it be
            lock?.release();
          }
          logger.info('relay stopped');
        })();
        return closing;
      },
    };
  } catch (err) {
    await bus?.close().catch(() => undefined);
    await ledger.close().catch(() => undefined);
    lock?.release();
    throw err;
  }
}
