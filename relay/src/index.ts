/**
 * The relay as a library: createRelay(config, overrides?) → { app, start(), close() }.
 * The `svc-relay` binary only parses arguments and calls this; tests build the same object.
 */
export { RELAY_VERSION } from './app.js';
export { buildConfig, type RelayConfig } from './config/config.js';
export { mergeSettings, SETTINGS, settingsFromEnv, settingsFromFile } from './config/env.js';
export {
  createRelay,
  ledgerPath,
  openLocalState,
  openOperatorState,
  type Relay,
  type RelayOverrides,
} from './relay.js';
