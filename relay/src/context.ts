/** Everything a route needs, built once at start and handed to the routes. */
import type { Logger } from 'pino';
import type { AdminPrincipal } from './auth/admin-token.js';
import type { Bus } from './bus/index.js';
import type { RelayConfig } from './config/config.js';
import type { Deployment } from './deployment/deployment.js';
import type { Ledger } from './ledger/ledger.js';

export interface AdminVerifier {
  verify(token: string): Promise<AdminPrincipal>;
}

export interface RelayContext {
  config: RelayConfig;
  deployment: Deployment;
  ledger: Ledger;
  /** Absent only in route tests that need no bus. */
  bus: Bus | undefined;
  /** Absent when no external authority is configured: admin routes refuse every token. */
  adminVerifier: AdminVerifier | undefined;
  logger: Logger;
  now: () => number;
}
