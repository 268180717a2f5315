import { type ChildProcess, spawn } from 'node:child_process';
import { constants, readFileSync, readlinkSync } from 'node:fs';
import { access, readFile, rm, writeFile } from 'node:fs/promises';
import { connect as tcpConnect } from 'node:net';
import { delimiter, isAbsolute, join } from 'node:path';
import { createInterface } from 'node:readline';
import { SvcError } from '@svc/shared';
import type { Logger } from 'pino';
import { isRunning, type ProcessIdentity, parentPid, processIdentity } from './process-identity.js';

export const NATS_SERVER_NOT_FOUND =
  'nats-server not found (on PATH, nor in /usr/sbin): install it with `sudo apt-get install -y nats-server`, point SVC_RELAY_NATS_SERVER_BIN at it, or set SVC_RELAY_NATS_URL';

/** Where Debian's package installs it: not on a normal user's PATH, which lacks /usr/sbin. */
export const DEBIAN_NATS_SERVER = '/usr/sbin/nats-server';

/**
 * Finds the nats-server executable the way a shell would, then where Debian's package puts
 * it, or throws the one-line actionable error.
 */
export async function resolveNatsServerBin(
  bin: string,
  pathEnv = process.env.PATH ?? '',
  fallback = DEBIAN_NATS_SERVER,
): Promise<string> {
  const candidates = bin.includes('/')
    ? [bin]
    : [
        ...pathEnv
          .split(delimiter)
          .filter(isAbsolute)
          .map((d) => join(d, bin)),
        ...(bin === 'nats-server' ? [fallback] : []),
      ];
  for (const file of candidates) {
    try {
      await access(file, constants.X_OK);
      return file;
    } catch {
      // try the next PATH entry
    }
  }
  // a name or path the operator gave is named, not the default's install hint
  if (bin !== 'nats-server') {
    throw new SvcError(
      'dependency_missing',
      `SVC_RELAY_NATS_SERVER_BIN is ${JSON.stringify(bin)}, ${bin.includes('/') ? 'which is not an executable file' : 'which is not on PATH'}: point it at the nats-server executable, unset it to find nats-server on PATH or in /usr/sbin, or set SVC_RELAY_NATS_URL`,
    );
  }
  throw new Error(NATS_SERVER_NOT_FOUND);
}

export interface ManagedServerOptions {
  bin: string;
  configFile: string;
  host: string;
  port: number;
  pidFile: string;
  logger: Logger;
  /** How long to wait for the client port to accept connections. */
  startTimeoutMs?: number;
}

const STOP_GRACE_MS = 5000;
const TAIL_LINES = 20;
/** In the nats-server's environment: `<pid>:<start time>` of the relay that started it. */
const OWNER_ENV = 'SVC_BUS_OWNER';

/**
 * A nats-server child process: spawned from a config file, awaited until its client
 * port accepts connections, restarted with backoff if it dies, stopped with SIGTERM
 * (SIGKILL after 5 s).
 */
export class ManagedNatsServer {
  readonly #opts: ManagedServerOptions;
  readonly #log: Logger;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #stopping = false;
  // Only a server that came up once is restarted; a failing first start is reported to the caller.
  #cameUp = false;
  #restarts = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  readonly #tail: string[] = [];

  private constructor(opts: ManagedServerOptions) {
    this.#opts = opts;
    this.#log = opts.logger;
  }

  static async start(opts: ManagedServerOptions): Promise<ManagedNatsServer> {
    // the bus looked already, before it wrote the config; this finds the pid file gone then
    await stopLeftoverServer(opts.pidFile, opts.configFile, opts.logger);
    const server = new ManagedNatsServer(opts);
    await server.#spawnAndWait();
    return server;
  }

  get pid(): number | undefined {
    return this.#child?.exitCode === null && this.#child.signalCode === null ? this.#child.pid : undefined;
  }

  get running(): boolean {
    return this.pid !== undefined;
  }

  /** Last lines nats-server printed; used to explain a failure. */
  get tail(): string {
    return this.#tail.join('\n');
  }

  async #spawnAndWait(): Promise<void> {
    // Own process group: a terminal's Ctrl-C reaches the relay only, which then stops
    // the server in order (a leftover from a killed relay is reaped at the next start).
    const self = processIdentity(process.pid);
    const child = spawn(this.#opts.bin, ['-c', this.#opts.configFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env, [OWNER_ENV]: `${self.pid}:${self.start ?? ''}` },
    });
    this.#child = child;
    let exitedEarly: Error | undefined;
    this.#exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        exitedEarly = new Error(`nats-server exited during start (code ${code}, signal ${signal}): ${this.tail}`);
        this.#onExit(child, code, signal);
        resolve();
      });
      child.once('error', (err) => {
        exitedEarly = new Error(`nats-server could not be started: ${err.message}`);
        resolve();
      });
    });
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => this.#onLine(line));
    }
    // Written at once, so a relay killed while waiting still leaves a trace for the next start.
    if (child.pid !== undefined) await writeFile(this.#opts.pidFile, `${child.pid}\n`);

    const deadline = Date.now() + (this.#opts.startTimeoutMs ?? 10_000);
    while (!(await portAccepts(this.#opts.host, this.#opts.port))) {
      if (exitedEarly) throw exitedEarly;
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`nats-server did not accept connections on port ${this.#opts.port} in time: ${this.tail}`);
      }
      await sleep(50);
    }
    if (exitedEarly) throw exitedEarly;
    this.#cameUp = true;
    this.#log.info({ nats_pid: child.pid, port: this.#opts.port }, 'bus: nats-server started');
  }

  #onLine(line: string): void {
    this.#tail.push(line);
    if (this.#tail.length > TAIL_LINES) this.#tail.shift();
    if (line.includes('[FTL]') || line.includes('[ERR]')) this.#log.error({ nats: line }, 'bus: nats-server');
    else if (line.includes('[WRN]')) this.#log.warn({ nats: line }, 'bus: nats-server');
    else this.#log.debug({ nats: line }, 'bus: nats-server');
  }

  #onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#stopping || !this.#cameUp || child !== this.#child) return;
    this.#log.error({ nats_pid: child.pid, code, signal, tail: this.tail }, 'bus: nats-server exited unexpectedly');
    // Clients reconnect on their own, so bringing the server back is all recovery needs.
    const delay = Math.min(30_000, 500 * 2 ** this.#restarts++);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (this.#stopping) return;
      this.#spawnAndWait().then(
        () => {
          this.#restarts = 0;
        },
        (err: Error) => this.#log.error({ err: err.message }, 'bus: nats-server restart failed'),
      );
    }, delay);
    this.#restartTimer.unref();
  }

  /** Stops the child: SIGTERM, then SIGKILL after 5 s; waits for the exit. Idempotent. */
  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#restartTimer) clearTimeout(this.#restartTimer);
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killTimer = setTimeout(() => {
        this.#log.warn({ nats_pid: child.pid }, 'bus: nats-server ignored SIGTERM; sending SIGKILL');
        child.kill('SIGKILL');
      }, STOP_GRACE_MS);
      await this.#exited;
      clearTimeout(killTimer);
      this.#log.info({ nats_pid: child.pid }, 'bus: nats-server stopped');
    }
    await rm(this.#opts.pidFile, { force: true });
  }
}

/**
 * A relay killed without cleanup leaves its nats-server running, holding the port and
 * the JetStream store. Stop it only if the pid file names a nats-server started with
 * this very config file (an unrelated process that reused the pid is left alone) and the
 * relay that started it is gone: a running one's is refused with data_dir_in_use, before
 * anything is written.
 */
export async function stopLeftoverServer(pidFile: string, configFile: string, logger: Logger): Promise<void> {
  let pid: number;
  try {
    pid = Number.parseInt(await readFile(pidFile, 'utf8'), 10);
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 1) return;
  let cmdline: string;
  try {
    cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ');
  } catch {
    await rm(pidFile, { force: true });
    return;
  }
  if (!cmdline.includes('nats-server') || !cmdline.includes(configFile)) return;
  const owner = serverOwner(pid);
  if (owner && isRunning(owner)) {
    throw new SvcError(
      'data_dir_in_use',
      `the nats-server (pid ${pid}) of ${configFile} belongs to the running relay with pid ${owner.pid}; stop that relay first`,
    );
  }
  logger.warn({ nats_pid: pid, owner_pid: owner?.pid }, 'bus: stopping a nats-server left over from an earlier run');
  process.kill(pid, 'SIGTERM');
  // a zombie counts as gone: an orphan's adopter may never reap it
  const alive = () => isRunning({ pid, start: undefined });
  const deadline = Date.now() + STOP_GRACE_MS;
  while (alive()) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      break;
    }
    await sleep(50);
  }
  const killDeadline = Date.now() + 2000;
  while (alive() && Date.now() < killDeadline) await sleep(20);
  await rm(pidFile, { force: true });
}

/**
 * The relay that started a nats-server: named in its environment; for one an older relay
 * started, its parent, unless that is init or a subreaper (an orphan's adopter is never a
 * process of the relay's own runtime).
 */
function serverOwner(pid: number): ProcessIdentity | undefined {
  let environ: string[] | undefined;
  try {
    environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    // not ours to read: ask the parent
  }
  const named = environ?.find((e) => e.startsWith(`${OWNER_ENV}=`));
  if (named) {
    const [owner = '', start = ''] = named.slice(OWNER_ENV.length + 1).split(':');
    return { pid: Number(owner), start: start || undefined };
  }
  const ppid = parentPid(pid) ?? 0;
  const exe = ppid > 1 ? executable(ppid) : undefined;
  return exe !== undefined && exe === executable(process.pid) ? processIdentity(ppid) : undefined;
}

function executable(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return undefined;
  }
}

function portAccepts(host: string, port: number): Promise<boolean> {
  const target = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: target, port });
    socket.setTimeout(500);
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
