// The end-to-end envelope (browser-safe: no node:* imports anywhere under this folder).
export * from './envelope.js';
export * from './errors.js';
export * from './format.js';
export * from './hpke.js';
export * from './hpke-suite.js';
export * from './key-checks.js';
export * from './keys.js';
export * from './message-id.js';
export * from './replay-guard.js';
