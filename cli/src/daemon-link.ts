/**
 * The CLI's one door to the daemon: the commands use `DaemonApi`, the interface the
 * daemon's `DaemonClient` (`@svc/daemon/client`) implements from the one declaration of
 * the socket API, so tests hand in a fake of the same interface.
 */
import { type DaemonApi, DaemonClientError, type DaemonEvent, ensureDaemon, socketPathFor } from '@svc/daemon/client';
import { CliError } from './errors.js';

export type { DaemonApi };

export interface ConnectOptions {
  home: string;
  /** start the daemon when none answers (false with --no-autostart) */
  autostart: boolean;
  /** environment of a daemon started here */
  env?: NodeJS.ProcessEnv;
  /** each daemon call's deadline (default 60 s) */
  callTimeoutMs?: number;
}

/** A client of a running daemon, started (detached) first unless autostart is false. */
export async function connectDaemon(options: ConnectOptions): Promise<DaemonApi> {
  try {
    return await ensureDaemon({
      home: options.home,
      autostart: options.autostart,
      ...(options.env ? { env: options.env } : {}),
      ...(options.callTimeoutMs ? { callTimeoutMs: options.callTimeoutMs } : {}),
    });
  } catch (err) {
    if (err instanceof DaemonClientError && err.code === 'daemon_unavailable' && !options.autostart) {
      throw new CliError(
        'daemon_unavailable',
        `No svc daemon answers on ${socketPathFor(options.home)}; start it with \`svc start\` (same SVC_HOME) or run the command without --no-autostart.`,
        { cause: err },
      );
    }
    throw err;
  }
}

/** The daemon's events (of one agent, or all) until `signal` aborts. */
export async function* eventsUntil(
  link: DaemonApi,
  agent: string | undefined,
  signal?: AbortSignal,
): AsyncGenerator<DaemonEvent> {
  const stream = await link.events(agent === undefined ? {} : { agent });
  const close = () => stream.close();
  if (signal?.aborted) close();
  signal?.addEventListener('abort', close, { once: true });
  try {
    yield* stream;
  } finally {
    signal?.removeEventListener('abort', close);
    stream.close();
  }
}
