/**
 * Everything a route needs, built once by createRelay (src/relay.ts) and handed to the
 * route plugins; nothing is built again per route.
 */
import type { Logger } from 'pino';
import type { AdminPrincipal } from './auth/admin-token.js';
import type { AccessTokenVerifier } from './auth/agent-credentials.js';
import type { BlobStore } from './blobs/blob-store.js';
import type { Bus } from './bus/index.js';
import type { RelayConfig } from './config/config.js';
import type { Deployment } from './deployment/deployment.js';
import type { Ledger } from './ledger/ledger.js';
import type { LedgerStores } from './ledger/stores.js';
import type { BusInbox } from './messages/bus-inbox.js';
import type { KeyService } from './services/keys.js';
import type { Messaging } from './services/messages.js';
import type { TenantQueue } from './services/tenant-queue.js';

export interface AdminVerifier {
  verify(token: string): Promise<AdminPrincipal>;
}

/** What the relay's services use of the message bus (the managed or external NATS). */
export type RelayBus = Pick<
  Bus,
  | 'tenantConnection'
  | 'revokeUsers'
  | 'mintUserCreds'
  | 'publishUplink'
  | 'mintUplinkCreds'
  | 'mintedInTenant'
  | 'leafUrl'
  | 'health'
  | 'close'
  | 'blobQuota'
  | 'streamReplicas'
>;

/** The parts that need no other service: what the services themselves are built from. */
export interface RelayBase {
  config: RelayConfig;
  deployment: Deployment;
  /** the connection, and the store of grants, agents, API keys, challenges and bus users */
  ledger: Ledger;
  /** every other ledger area */
  stores: LedgerStores;
  /**
   * No other relay instance shares this one's ledger: it runs its own nats-server, so it
   * holds its data dir alone (relay.lock), and its ledger is the SQLite file in there.
   * Relays on an external NATS may share a data dir (and so a SQLite ledger), and any
   * number share a PostgreSQL one.
   */
  soleInstance: boolean;
  bus: RelayBus;
  /** Envelopes and receipts on the bus (one set of tenant clients for messaging and webhooks). */
  inbox: BusInbox;
  /** Absent when no external authority is configured: admin routes refuse every token. */
  adminVerifier: AdminVerifier | undefined;
  /** Agents' access tokens: one verifier (and so one cache of verified tokens) per relay. */
  accessTokens: AccessTokenVerifier;
  logger: Logger;
  now: () => number;
  /** Named-source claims and releases, one at a time per tenant (limits are checked, then taken). */
  sourceClaims: TenantQueue;
}

export interface RelayContext extends RelayBase {
  messaging: Messaging;
  keys: KeyService;
  /** attachment blobs in the tenants' JetStream stores */
  blobs: BlobStore;
}
