export * from './common.js';
export * from './admin.js';
export * from './agent-auth.js';
