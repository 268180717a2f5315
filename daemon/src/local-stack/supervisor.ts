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
import { connect } from 'node:net';
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
import { DaemonError } from '../errors.js';

const START_TIMEOUT_MS = 10_000;
const RESTART_DELAY_MS = 500;

function portAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(500, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

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
    writeFileSync(this.#files.configFile, localServerConfig(opts), { mode: 0o600 });
    this.#token = token;
    this.#opts = opts;
    this.#wanted = true;
    await this.#spawn();
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await portAnswers(opts.listen, opts.port))) {
      if (this.#child?.exitCode !== null || Date.now() > deadline) {
        await this.stop();
        throw new DaemonError('local_stack_failed', `nats-server did not come up on ${opts.listen}:${opts.port}.`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    this.#log.info({ port: opts.port, local_only: opts.uplink === undefined }, 'local stack: nats-server up');
    return this.status();
  }

  async #spawn(): Promise<void> {
    const opts = this.#opts as LocalStackOptions;
    const child = spawn(this.#bin, ['-c', this.#files.configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    child.stderr?.on('data', () => undefined);
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
