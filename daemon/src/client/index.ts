/** The daemon's public client surface: the API contract and (soon) DaemonClient. */
export * from './api.js';
