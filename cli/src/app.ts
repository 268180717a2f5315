/**
 * What every command handler gets: the process surroundings (environment, output
 * streams, stdin, how to reach the daemon) and, per invocation, the resolved common
 * options (`--as`, `--json`, `-v`). Built once per run; tests build it with fakes.
 */

import { defaultHome, homeProblem } from '@svc/daemon/client';
import type { Command } from 'commander';
import type { ConnectOptions, DaemonApi } from './daemon-link.js';
import { agentRequired, CliError } from './errors.js';
import { json, type Writer } from './output.js';

export interface CliIO {
  env: NodeJS.ProcessEnv;
  stdout: Writer;
  stderr: Writer;
  /** stdin for --stdin and confirmations; absent means none (tests, pipes closed) */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** how to reach the daemon (default: the socket API under $SVC_HOME) */
  connect?: (options: ConnectOptions) => Promise<DaemonApi>;
  /** ends long-running commands (watch, msg check --stream) besides SIGINT */
  signal?: AbortSignal;
  /** how long `svc stop` waits for the daemon's process to exit, ms (default 30 s) */
  stopWaitMs?: number;
}

export interface CommonOptions {
  as?: string;
  json?: boolean;
  verbose?: number;
}

export class App {
  readonly io: CliIO;
  readonly #home: string;
  #homeChecked = false;
  /** exit status of a command that printed its own report but still failed (doctor) */
  exitCode = 0;
  private linkPromise: Promise<DaemonApi> | undefined;

  constructor(io: CliIO) {
    this.io = io;
    this.#home = defaultHome(io.env);
  }

  /**
   * $SVC_HOME, checked once before a command uses it: one on a virtual file system (/proc,
   * /sys) is config_invalid, before anything tries to create it (under /proc, Node's mkdir
   * never returned). Commands that need no home (--version, help) never ask.
   */
  get home(): string {
    if (!this.#homeChecked) {
      const problem = homeProblem(this.#home);
      if (problem) throw new CliError('config_invalid', problem);
      this.#homeChecked = true;
    }
    return this.#home;
  }

  /** The per-invocation view of one command. */
  on(cmd: Command): Run {
    return new Run(this, cmd);
  }

  /**
   * The daemon link, autostarting the daemon unless the global --no-autostart was given.
   * `callTimeoutMs`: each call's deadline, for the link's first user only (it is kept).
   */
  link(autostart: boolean, callTimeoutMs?: number): Promise<DaemonApi> {
    // the daemon client (node:http, node:child_process) loads only for commands that need it
    const connect =
      this.io.connect ?? (async (o: ConnectOptions) => (await import('./daemon-link.js')).connectDaemon(o));
    // a failed attempt is not kept: `svc start -b` asks without autostart first, then with it
    this.linkPromise ??= connect({
      home: this.home,
      autostart,
      env: this.io.env,
      ...(callTimeoutMs ? { callTimeoutMs } : {}),
    }).catch((err: unknown) => {
      this.linkPromise = undefined;
      throw err;
    });
    return this.linkPromise;
  }
}

function rootOf(cmd: Command): Command {
  let c = cmd;
  while (c.parent) c = c.parent;
  return c;
}

export class Run {
  readonly app: App;
  readonly cmd: Command;

  constructor(app: App, cmd: Command) {
    this.app = app;
    this.cmd = cmd;
  }

  opts<T extends object = Record<string, never>>(): CommonOptions & T {
    return this.cmd.opts() as CommonOptions & T;
  }

  get json(): boolean {
    return this.opts().json === true;
  }

  get env(): NodeJS.ProcessEnv {
    return this.app.io.env;
  }

  /** -v: info, -vv: debug; both to stderr so --json output stays clean. */
  info(message: string): void {
    if ((this.opts().verbose ?? 0) >= 1) this.app.io.stderr.write(`svc: ${message}\n`);
  }

  debug(message: string): void {
    if ((this.opts().verbose ?? 0) >= 2) this.app.io.stderr.write(`svc: debug: ${message}\n`);
  }

  /** false with the global --no-autostart: no daemon started, and registration does not wait to receive */
  get autostart(): boolean {
    return rootOf(this.cmd).opts().autostart !== false;
  }

  async link(callTimeoutMs?: number): Promise<DaemonApi> {
    const autostart = this.autostart;
    this.debug(`daemon home ${this.app.home}, autostart ${autostart}`);
    const link = await this.app.link(autostart, callTimeoutMs);
    this.debug('daemon answered');
    return link;
  }

  /** The daemon, and the agent a command acts as (below); `callTimeoutMs` as for `link`. */
  async asAgent(callTimeoutMs?: number): Promise<{ link: DaemonApi; agent: string }> {
    const link = await this.link(callTimeoutMs);
    return { link, agent: await this.agent(link) };
  }

  /**
   * The agent a command acts as: an explicit --as wins over SVC_AGENT; without either,
   * the only local agent in service, else agent_required. An agent out of service (its
   * archive or agent.json cannot be used) is never chosen for the user and does not make
   * the choice ambiguous: no command could act as it. When none is left in service, the
   * failure is theirs (its code and message, or their names and `svc doctor`), not "register
   * one", which would spend an enrollment grant on a machine whose agent only needs its file.
   */
  async agent(link?: DaemonApi): Promise<string> {
    const explicit = this.opts().as?.trim();
    if (explicit) {
      this.debug(`agent ${explicit} (--as)`);
      return explicit;
    }
    const fromEnv = this.env.SVC_AGENT?.trim();
    if (fromEnv) {
      this.debug(`agent ${fromEnv} (SVC_AGENT)`);
      return fromEnv;
    }
    const daemon = link ?? (await this.link());
    // The status names every agent, also one whose agent.json cannot be read (the agent list
    // leaves that one out, so it alone could not tell "the only agent" from "the only one it
    // could read"). A machine's leaf-uplink identity (nats-relay without http-relay) has no
    // agent routes: it is never the agent a command acts as, so it does not make the choice
    // ambiguous.
    const agents = (await daemon.status()).agents.filter((a) => a.kind !== 'uplink');
    const out = agents.filter((a) => a.unusable);
    const inService = agents.filter((a) => !a.unusable);
    if (inService.length === 1) {
      const why = out.length === 0 ? 'the only local agent' : 'the only local agent in service';
      this.debug(`agent ${inService[0]!.name} (${why})`);
      return inService[0]!.name;
    }
    if (inService.length > 1) {
      throw agentRequired(inService.map((a) => a.name));
    }
    const [first] = out;
    if (!first?.unusable) {
      throw new CliError(
        'unknown_agent',
        'No local agent is registered; register one with `svc register --enrollment-grant CODE`.',
      );
    }
    if (out.length === 1) {
      throw new CliError(first.unusable.error, `Agent ${first.name} is out of service: ${first.unusable.message}`);
    }
    // the code of the first by name (they are all out of service; doctor has each one's)
    throw new CliError(
      first.unusable.error,
      `Every local agent is out of service: ${out.map((a) => `${a.name} (${a.unusable?.error})`).join(', ')}; \`svc doctor\` says which file of each cannot be used and what to do.`,
    );
  }

  /** The explicit agent choice (--as, then SVC_AGENT), or undefined. */
  explicitAgent(): string | undefined {
    return this.opts().as?.trim() || this.env.SVC_AGENT?.trim() || undefined;
  }

  /**
   * Of the daemon's `agents`, the one the explicit choice names (by name or number), or all
   * of them without one; unknown_agent when it names none (doctor, agent prune).
   */
  chosenAgents<A extends { name: string; agent_number?: string }>(agents: A[]): A[] {
    const chosen = this.explicitAgent();
    if (!chosen) return agents;
    const found = agents.filter((a) => a.name === chosen || a.agent_number === chosen);
    if (found.length === 0) throw new CliError('unknown_agent', `No local agent ${JSON.stringify(chosen)}.`);
    return found;
  }

  out(text: string): void {
    this.app.io.stdout.write(text);
  }

  /** `--json`: the value as JSON; otherwise the human rendering. */
  print(value: unknown, human: () => string): void {
    this.out(this.json ? json(value) : human());
  }

  async readStdin(): Promise<string> {
    const stdin = this.app.io.stdin;
    if (!stdin) throw new CliError('io_error', 'No standard input to read from.');
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  }

  /** Asks on the terminal; without one, a destructive command needs --yes. */
  async confirm(question: string): Promise<void> {
    const stdin = this.app.io.stdin;
    if (!stdin?.isTTY) {
      throw new CliError('confirmation_required', `${question} Pass --yes to confirm without a terminal.`);
    }
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: stdin, output: process.stderr });
    try {
      const answer = (await rl.question(`${question} [y/N] `)).trim().toLowerCase();
      if (answer !== 'y' && answer !== 'yes') throw new CliError('confirmation_required', 'Cancelled.');
    } finally {
      rl.close();
    }
  }

  /** Prompts for a line on the terminal; undefined without one. */
  async prompt(question: string): Promise<string | undefined> {
    const stdin = this.app.io.stdin;
    if (!stdin?.isTTY) return undefined;
    const { createInterface } = await import('node:readline/promises');
    const rl = createInterface({ input: stdin, output: process.stderr });
    try {
      return (await rl.question(question)).trim();
    } finally {
      rl.close();
    }
  }

  /** The abort signal of long-running commands: the caller's, or SIGINT/SIGTERM. */
  stopSignal(): AbortSignal {
    if (this.app.io.signal) return this.app.io.signal;
    const ctl = new AbortController();
    const stop = () => ctl.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    return ctl.signal;
  }
}
