export * from './admin.js';
export * from './agent-auth.js';
export * from './agents.js';
export * from './common.js';
export * from './keys.js';
export * from './local-stack.js';
export * from './messages.js';
