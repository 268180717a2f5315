#!/usr/bin/env node
/** svc-daemon: runs the daemon in the foreground until SIGTERM/SIGINT or POST /v1/shutdown. */
import { configFromEnv, createDaemon, type Daemon, DaemonError } from '../index.js';

async function main(): Promise<void> {
  const foreground = process.argv.includes('--foreground') || process.argv.includes('-f');
  let daemon: Daemon;
  try {
    // a bad setting is one line with its code, as a failed start is (it was an uncaught throw)
    daemon = createDaemon(configFromEnv({ logToStderr: foreground }));
    await daemon.start();
  } catch (err) {
    const code = err instanceof DaemonError ? err.code : 'internal_error';
    process.stderr.write(`${JSON.stringify({ error: code, message: (err as Error).message })}\n`);
    process.exit(code === 'daemon_already_running' ? 3 : 1);
  }
  const stop = () => void daemon.close();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await daemon.closed;
  process.exit(0);
}

void main();
