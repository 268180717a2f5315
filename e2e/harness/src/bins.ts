/**
 * The commands as users run them, from the build (`npm run build`; the global setup
 * rebuilds when a source is newer): the committed bins npm links, the CLI's runner over
 * its bundle and the relay's over its compiled code. The CLI starts the daemon from
 * daemon/dist on its own.
 */
import { fileURLToPath } from 'node:url';

export const SVC_BIN = fileURLToPath(new URL('../../../cli/bin/svc.cjs', import.meta.url));
export const RELAY_BIN = fileURLToPath(new URL('../../../relay/bin/svc-relay.js', import.meta.url));
