/**
 * The local nats-server child of the daemon (Debian's, never downloaded): written config,
 * spawned, awaited until its client port answers, restarted if it dies while wanted,
 * stopped with SIGTERM (SIGKILL after a grace period). The pid file plus the process's
 * own command line are what `svc stop --local` checks before signalling anything
 * (client/local-stack/ownership.ts, which the CLI uses when no daemon answers).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { LocalStackStatus } from '../client/api.js';
import {
  type PidRecord,
  proveOwnership,
  removePidRecord,
  terminate,
  writePidRecord,
} from '../client/local-stack/ownership.js';
import {
  type LocalStackFiles,
  type LocalStackOptions,
  localServerConfig,
} from '../client/local-stack/server-config.js';
import { orAfter } from '../client/or-after.js';
import { DaemonError } from '../errors.js';
import { ensurePrivateFile } from '../private-file.js';

const START_TIMEOUT_MS = 10_000;
const RESTART_DELAY_MS = 500;
/** What nats-server logs (stderr) once its listeners are bound: from then on the port is our child's. */
const READY_LINE = 'Server is ready';
/** The end of stderr kept while waiting for READY_LINE (it may come split across chunks). */
const STDERR_TAIL = 4096;

export class LocalStack {
  readonly #files: LocalStackFiles;
  readonly #bin: string;
  readonly #log: Logger;
  #child: ChildProcess | undefined;
  #opts: LocalStackOptions | undefined;
  /** what the daemon's own client presents (in the 0600 config file, never in an answer) */
  #token: string | undefined;
  #wanted = false;
  #restartTimer: NodeJS.Timeout | undefined;

  constructor(files: LocalStackFiles, log: Logger, bin = process.env.SVC_NATS_SERVER_BIN ?? '/usr/sbin/nats-server') {
    this.#files = files;
    this.#log = log;
    this.#bin = bin;
  }

  /** The token clients of the running server present. */
  get clientToken(): string | undefined {
    return this.#token;
  }

  status(): LocalStackStatus {
    const o = this.#opts;
    if (!this.#child?.pid || !o || this.#child.exitCode !== null) return { running: false };
    const host = o.listen.includes(':') ? `[${o.listen}]` : o.listen;
    return {
      running: true,
      pid: this.#child.pid,
      local_only: o.uplink === undefined,
      url: `nats://${host}:${o.port}`,
      monitor_url: `http://${host}:${o.monitorPort}`,
      ...(o.uplink ? { uplink: o.uplink.leafUrl } : {}),
    };
  }

  async start(input: LocalStackOptions): Promise<LocalStackStatus> {
    if (this.status().running) throw new DaemonError('local_stack_running');
    // a server this home started earlier (a daemon that crashed) is ours to replace
    const prior = proveOwnership(this.#files.pidFile, this.#files.configFile);
    if (prior.owned) await terminate(prior.record.pid);
    mkdirSync(this.#files.dir, { recursive: true, mode: 0o700 });
    // a fresh token at each start: clients of an earlier run cannot come back
    const token = input.clientToken ?? randomBytes(32).toString('base64url');
    const opts: LocalStackOptions = { ...input, clientToken: token };
    // 0600 before the token is written, also when an older file of a wider mode is there
    ensurePrivateFile(this.#files.configFile);
    writeFileSync(this.#files.configFile, localServerConfig(opts), { mode: 0o600 });
    this.#token = token;
    this.#opts = opts;
    this.#wanted = true;
    const { ready } = await this.#spawn();
    // Up means our child said its listeners are bound, not that something answers on the
    // port: another user's process listening there first (the default 4222 is easy to
    // take) would otherwise get the daemon's token and every local delivery. Our child
    // then fails to bind and exits.
    const outcome = await orAfter(ready, START_TIMEOUT_MS, 'timeout' as const);
    if (outcome !== 'ready') {
      await this.stop();
      throw new DaemonError(
        'local_stack_failed',
        outcome === 'exited'
          ? `nats-server exited at start: is ${opts.listen}:${opts.port} or monitor port ${opts.monitorPort} taken by another process?`
          : `nats-server did not come up on ${opts.listen}:${opts.port}.`,
      );
    }
    this.#log.info({ port: opts.port, local_only: opts.uplink === undefined }, 'local stack: nats-server up');
    return this.status();
  }

  /** Spawns the child; resolves once it runs, with when it says it is ready (or exits first). */
  async #spawn(): Promise<{ ready: Promise<'ready' | 'exited'> }> {
    const opts = this.#opts as LocalStackOptions;
    const child = spawn(this.#bin, ['-c', this.#files.configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    const ready = new Promise<'ready' | 'exited'>((resolve) => {
      let tail = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL);
        if (tail.includes(READY_LINE)) resolve('ready');
      });
      child.once('exit', () => resolve('exited'));
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) =>
        reject(new DaemonError('local_stack_failed', `cannot run ${this.#bin}: ${err.message}`, { cause: err })),
      );
    });
    const record: PidRecord = {
      pid: child.pid as number,
      config_file: this.#files.configFile,
      started_at: new Date().toISOString(),
      local_only: opts.uplink === undefined,
      port: opts.port,
      monitor_port: opts.monitorPort,
      listen: opts.listen,
    };
    writePidRecord(this.#files.pidFile, record);
    child.once('exit', (code, signal) => {
      if (this.#child !== child) return;
      if (!this.#wanted) return;
      this.#log.warn({ code, signal }, 'local stack: nats-server exited; restarting');
      this.#restartTimer = setTimeout(() => void this.#spawn().catch(() => undefined), RESTART_DELAY_MS);
    });
    return { ready };
  }

  async stop(): Promise<boolean> {
    this.#wanted = false;
    clearTimeout(this.#restartTimer);
    const child = this.#child;
    this.#child = undefined;
    removePidRecord(this.#files.pidFile);
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return false;
    await terminate(child.pid, child);
    this.#log.info('local stack: nats-server stopped');
    return true;
  }
}
