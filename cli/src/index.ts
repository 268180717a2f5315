/** @svc/cli: the `svc` command tree, for embedding and tests. */
export const PACKAGE = '@svc/cli';
export { App, type CliIO } from './app.js';
export { connectDaemon, type DaemonApi, eventsUntil } from './daemon-link.js';
export { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './errors.js';
export type { PresentedMessage } from './mcp/present.js';
export { buildProgram, run, VERSION } from './program.js';
