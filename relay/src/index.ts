/**
 * The relay as a library: createRelay(config, overrides?) → { app, start(), close() }.
 * The `svc-relay` binary only parses arguments and calls this; tests build the same object.
 */
export { RELAY_VERSION } from './app.js';
// for the test harness (@svc/test-harness): what it builds in-process relays and agents from
export type { AdminAuthorityConfig } from './auth/admin-token.js';
export { type ClusterNode, findFreePort, writeNatsClusterConfig } from './bus/server-config.js';
export { buildConfig, type RelayConfig } from './config/config.js';
export { mergeSettings, type RawSettings, SETTINGS, settingsFromEnv, settingsFromFile } from './config/env.js';
export type { RelayBus, RelayContext } from './context.js';
export {
  createRelay,
  leafUrlOf,
  ledgerLocation,
  ledgerPath,
  openLedger,
  openLocalState,
  openOperatorState,
  type Relay,
  type RelayOverrides,
} from './relay.js';
export type { TypedApp } from './routes/types.js';
export { mintGrant } from './services/grants.js';
