/**
 * DaemonClient: the typed Node client of the daemon socket API (./api.ts), over node:http
 * with `socketPath`. Every failure is a DaemonClientError with the daemon's `code` and
 * HTTP `status`; no daemon on the socket is `daemon_unavailable`. `ensureDaemon` starts a
 * detached daemon when none answers. This module imports only node:* and the contract,
 * so the CLI, TUI and desktop load none of the daemon's internals.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createConnection } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type {
  AddDeploymentInput,
  ArchivedMessage,
  ConversationInfo,
  ConversationSearchInput,
  ConversationSummary,
  CreateConversationInput,
  DaemonEvent,
  DaemonStatus,
  DaemonSummary,
  DashboardLaunch,
  DashboardOpenInput,
  DeploymentAudit,
  DeploymentInfo,
  FetchDeploymentInput,
  InviteInput,
  KeyStatus,
  LocalAgent,
  LocalRegisterInput,
  LocalStackStartInput,
  LocalStackStatus,
  PeerKey,
  RegisterInput,
  RelayCall,
  RenewDeploymentInput,
  ReplyInput,
  SavedAttachment,
  SendInput,
  SentMessage,
  SyncResult,
  TrustStatus,
} from './api.js';

export * from './api.js';
export { ALL_AGENTS_KEY, statusFileText, statusText } from './statusline.js';

export class DaemonClientError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, message: string, status: number, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DaemonClientError';
    this.code = code;
    this.status = status;
  }
}

/** $SVC_HOME, else ~/.svc. */
export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.SVC_HOME || join(homedir(), '.svc'));
}

export function socketPathFor(home: string): string {
  return join(home, 'run', 'daemon.sock');
}

export interface DaemonClientOptions {
  /** SVC_HOME of the daemon (default: $SVC_HOME or ~/.svc) */
  home?: string;
  /** overrides the socket path derived from home */
  socketPath?: string;
  /** per-request timeout, ms (default 60 s; long-polls add their wait) */
  timeoutMs?: number;
}

export interface DaemonEventStream extends AsyncIterable<DaemonEvent> {
  close(): void;
}

const unavailable = (socket: string, cause: unknown) =>
  new DaemonClientError(
    'daemon_unavailable',
    `No svc daemon answers on ${socket}; start it with \`svc start\` (${(cause as Error).message}).`,
    503,
    { cause },
  );

const enc = encodeURIComponent;

function query(params: Record<string, string | number | boolean | undefined>): string {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${enc(k)}=${enc(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

export class DaemonClient {
  readonly home: string;
  readonly socketPath: string;
  readonly #timeoutMs: number;

  constructor(options: DaemonClientOptions = {}) {
    this.home = options.home ? resolve(options.home) : defaultHome();
    this.socketPath = options.socketPath ?? socketPathFor(this.home);
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  #open(
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = this.#timeoutMs,
    signal?: AbortSignal,
  ): Promise<IncomingMessage> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolvePromise, reject) => {
      const req = httpRequest({
        // a fresh connection per request, no agent: after a daemon restart a pooled socket
        // fails with EPIPE, and an agent's first request costs a CLI run ~3 ms (it checks
        // the host name against the IPv6 pattern)
        createConnection: () => createConnection(this.socketPath),
        method,
        path,
        headers: {
          host: 'svc-daemon',
          accept: 'application/json',
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
        },
        ...(signal ? { signal } : {}),
      });
      if (timeoutMs > 0) {
        req.setTimeout(timeoutMs, () =>
          req.destroy(
            new DaemonClientError('daemon_timeout', `The daemon did not answer within ${timeoutMs} ms.`, 504),
          ),
        );
      }
      req.once('response', resolvePromise);
      req.once('error', (err) => {
        if (err instanceof DaemonClientError) reject(err);
        else if (signal?.aborted) reject(new DaemonClientError('aborted', 'The request was cancelled.', 499));
        else reject(unavailable(this.socketPath, err));
      });
      req.end(payload);
    });
  }

  /** One JSON call; non-2xx answers throw DaemonClientError with the daemon's code. */
  async request<T>(method: string, path: string, body?: unknown, timeoutMs?: number, signal?: AbortSignal): Promise<T> {
    const res = await this.#open(method, path, body, timeoutMs, signal);
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = text;
    }
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) return parsed as T;
    const e = parsed as { error?: unknown; message?: unknown } | undefined;
    throw new DaemonClientError(
      typeof e?.error === 'string' ? e.error : 'internal_error',
      typeof e?.message === 'string' ? e.message : `The daemon answered ${status}.`,
      status,
    );
  }

  // --- daemon
  status(): Promise<DaemonStatus> {
    return this.request('GET', '/v1/status');
  }
  summary(): Promise<DaemonSummary> {
    return this.request('GET', '/v1/summary');
  }
  async shutdown(): Promise<void> {
    await this.request('POST', '/v1/shutdown', {});
  }

  // --- deployments
  listDeployments(): Promise<DeploymentInfo[]> {
    return this.request('GET', '/v1/deployments');
  }
  fetchDeployment(input: FetchDeploymentInput): Promise<DeploymentInfo> {
    return this.request('POST', '/v1/deployments/fetch', input);
  }
  addDeployment(input: AddDeploymentInput): Promise<DeploymentInfo> {
    return this.request('POST', '/v1/deployments/add', input);
  }
  getDeployment(name: string): Promise<DeploymentInfo> {
    return this.request('GET', `/v1/deployments/${enc(name)}`);
  }
  async removeDeployment(name: string): Promise<void> {
    await this.request('DELETE', `/v1/deployments/${enc(name)}`);
  }
  renewDeployment(name: string, input: RenewDeploymentInput = {}): Promise<DeploymentInfo> {
    return this.request('POST', `/v1/deployments/${enc(name)}/renew`, input);
  }
  auditDeployments(): Promise<DeploymentAudit[]> {
    return this.request('GET', '/v1/deployments-audit');
  }

  // --- agents
  register(input: RegisterInput): Promise<LocalAgent> {
    return this.request('POST', '/v1/agents/register', input);
  }
  registerLocal(input: LocalRegisterInput): Promise<LocalAgent> {
    return this.request('POST', '/v1/agents/local', input);
  }
  listAgents(): Promise<LocalAgent[]> {
    return this.request('GET', '/v1/agents');
  }
  getAgent(agent: string): Promise<LocalAgent> {
    return this.request('GET', `/v1/agents/${enc(agent)}`);
  }
  /** Revokes the agent on its relay, then forgets it here; `revoke: false` only forgets it. */
  async deregister(agent: string, opts: { revoke?: boolean } = {}): Promise<void> {
    await this.request('DELETE', `/v1/agents/${enc(agent)}${opts.revoke === false ? '?revoke=false' : ''}`);
  }
  token(agent: string): Promise<{ access_token: string; expires_at: string }> {
    return this.request('POST', `/v1/agents/${enc(agent)}/token`, {});
  }
  keys(agent: string): Promise<KeyStatus> {
    return this.request('GET', `/v1/agents/${enc(agent)}/keys`);
  }
  generateKeys(agent: string): Promise<KeyStatus> {
    return this.request('POST', `/v1/agents/${enc(agent)}/keys/generate`, {});
  }
  uploadSigningKey(agent: string): Promise<KeyStatus> {
    return this.request('POST', `/v1/agents/${enc(agent)}/keys/upload-signing`, {});
  }
  acceptPeerKey(agent: string, peerNumber: string): Promise<PeerKey> {
    return this.request('POST', `/v1/agents/${enc(agent)}/peers/${enc(peerNumber)}/accept-key`, {});
  }

  // --- messages
  send(agent: string, input: SendInput): Promise<SentMessage> {
    return this.request('POST', `/v1/agents/${enc(agent)}/send`, input);
  }
  reply(agent: string, input: ReplyInput): Promise<SentMessage> {
    return this.request('POST', `/v1/agents/${enc(agent)}/reply`, input);
  }
  inbox(
    agent: string,
    options: { source?: 'auto' | 'local' | 'api'; verified?: boolean } = {},
  ): Promise<ArchivedMessage[]> {
    return this.request(
      'GET',
      `/v1/agents/${enc(agent)}/inbox${query({ source: options.source, verified: options.verified || undefined })}`,
    );
  }
  /** `conversation` = conversation id or peer number */
  read(
    agent: string,
    conversation: string,
    options: { last?: number; since?: string; verified?: boolean } = {},
  ): Promise<ArchivedMessage[]> {
    return this.request(
      'GET',
      `/v1/agents/${enc(agent)}/conversations/${enc(conversation)}/messages${query({ last: options.last, since: options.since, verified: options.verified || undefined })}`,
    );
  }
  /** New inbound since the last check; `wait` long-polls up to that many seconds (max 300). */
  /** `signal` cancels a long-poll (Ctrl-C): the daemon then moves no cursor and acks nothing. */
  check(
    agent: string,
    options: { wait?: number; ack?: boolean; signal?: AbortSignal; verified?: boolean } = {},
  ): Promise<ArchivedMessage[]> {
    const waitMs = (options.wait ?? 0) * 1000;
    return this.request(
      'GET',
      `/v1/agents/${enc(agent)}/check${query({ wait: options.wait, ack: options.ack, verified: options.verified || undefined })}`,
      undefined,
      this.#timeoutMs + waitMs,
      options.signal,
    );
  }
  ack(agent: string, messageId: string): Promise<{ message_id: string; acked_at: string }> {
    return this.request('POST', `/v1/agents/${enc(agent)}/messages/${enc(messageId)}/ack`, {});
  }
  search(agent: string, q: string, options: { limit?: number; verified?: boolean } = {}): Promise<ArchivedMessage[]> {
    return this.request(
      'GET',
      `/v1/agents/${enc(agent)}/search${query({ q, limit: options.limit, verified: options.verified || undefined })}`,
    );
  }
  /** Conversations, most recent first, with unread counts and the last message. */
  conversations(agent: string, options: { limit?: number; verified?: boolean } = {}): Promise<ConversationSummary[]> {
    return this.request(
      'GET',
      `/v1/agents/${enc(agent)}/conversations${query({ limit: options.limit, verified: options.verified || undefined })}`,
    );
  }
  /** Own and peers' key fingerprints, changed peer keys and held envelopes. */
  trust(agent: string): Promise<TrustStatus> {
    return this.request('GET', `/v1/agents/${enc(agent)}/trust`);
  }
  sync(agent: string): Promise<SyncResult> {
    return this.request('POST', `/v1/agents/${enc(agent)}/sync`, {});
  }
  // --- conversations: groups and broadcasts, search
  createConversation(agent: string, input: CreateConversationInput): Promise<ConversationInfo> {
    return this.request('POST', `/v1/agents/${enc(agent)}/conversations`, input);
  }
  getConversation(agent: string, id: string): Promise<ConversationInfo> {
    return this.request('GET', `/v1/agents/${enc(agent)}/conversations/${enc(id)}`);
  }
  invite(agent: string, id: string, input: InviteInput): Promise<ConversationInfo> {
    return this.request('POST', `/v1/agents/${enc(agent)}/conversations/${enc(id)}/invite`, input);
  }
  leave(agent: string, id: string): Promise<ConversationInfo> {
    return this.request('POST', `/v1/agents/${enc(agent)}/conversations/${enc(id)}/leave`, {});
  }
  conversationMessages(
    agent: string,
    id: string,
    options: { limit?: number; since?: string } = {},
  ): Promise<ArchivedMessage[]> {
    return this.request('GET', `/v1/agents/${enc(agent)}/conversations/${enc(id)}/page${query(options)}`);
  }
  searchConversations(agent: string, input: ConversationSearchInput = {}): Promise<ArchivedMessage[]> {
    return this.request('GET', `/v1/agents/${enc(agent)}/conversation-search${query({ ...input })}`);
  }
  /** Fetches, checks and decrypts a message's attachment into `dir` (absolute). */
  saveAttachment(agent: string, messageId: string, dir: string): Promise<SavedAttachment> {
    return this.request('POST', `/v1/agents/${enc(agent)}/messages/${enc(messageId)}/attachment`, { dir }, 300_000);
  }

  relay<T = unknown>(agent: string, call: RelayCall): Promise<{ status: number; body: T }> {
    return this.request('POST', `/v1/agents/${enc(agent)}/relay`, call);
  }
  /** Serves the dashboard on loopback (if not yet) and returns a fresh one-time sign-in link. */
  openDashboard(input: DashboardOpenInput = {}): Promise<DashboardLaunch> {
    return this.request('POST', '/v1/dashboard', input);
  }

  /** The local stack's nats-server: start (with its settings), stop, or status. */
  localStack(action: 'start', input: LocalStackStartInput): Promise<LocalStackStatus>;
  localStack(action: 'stop'): Promise<{ stopped: boolean }>;
  localStack(action: 'status'): Promise<LocalStackStatus>;
  localStack(action: 'start' | 'stop' | 'status', input?: LocalStackStartInput): Promise<unknown> {
    if (action === 'status') return this.request('GET', '/v1/local-stack');
    return this.request('POST', `/v1/local-stack/${action}`, input ?? {});
  }

  /**
   * Subscribes to the event stream; resolves once the daemon has accepted the subscription
   * (events after that point are delivered). Iterate it; `close()` ends it.
   */
  async events(options: { agent?: string } = {}): Promise<DaemonEventStream> {
    const res = await this.#open('GET', `/v1/events${query({ agent: options.agent })}`, undefined, 0);
    if ((res.statusCode ?? 0) !== 200) {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      const e = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { error?: string; message?: string };
      throw new DaemonClientError(e.error ?? 'internal_error', e.message ?? 'events refused', res.statusCode ?? 0);
    }
    res.setEncoding('utf8');
    async function* lines(): AsyncGenerator<DaemonEvent> {
      let buffer = '';
      try {
        for await (const chunk of res as AsyncIterable<string>) {
          buffer += chunk;
          let nl = buffer.indexOf('\n');
          while (nl >= 0) {
            const line = buffer.slice(0, nl).trim();
            buffer = buffer.slice(nl + 1);
            nl = buffer.indexOf('\n');
            if (line !== '') yield JSON.parse(line) as DaemonEvent;
          }
        }
      } catch (err) {
        // close() destroys the socket: that is the normal end of the stream
        if (!res.destroyed) throw err;
      }
    }
    const it = lines();
    return {
      [Symbol.asyncIterator]: () => it,
      close: () => {
        res.destroy();
      },
    };
  }
}

export interface EnsureDaemonOptions {
  home?: string;
  /** start a daemon when none answers (default true) */
  autostart?: boolean;
  /** how long to wait for the socket after starting, ms (default 20 s) */
  timeoutMs?: number;
  /** environment of the started daemon (default process.env; SVC_HOME is set from home) */
  env?: NodeJS.ProcessEnv;
  /** the Node binary that runs a started daemon (default this process's; Electron passes the system's `node`) */
  nodePath?: string;
}

/** How to run the daemon binary: from the TypeScript sources (development) or the built dist. */
export function daemonCommand(): { command: string; args: string[]; cwd: string } {
  const here = dirname(fileURLToPath(import.meta.url));
  const packageRoot = resolve(here, '..', '..');
  const tsBin = join(packageRoot, 'src', 'bin', 'svc-daemon.ts');
  const jsBin = join(packageRoot, 'dist', 'bin', 'svc-daemon.js');
  const fromSources = fileURLToPath(import.meta.url).endsWith('.ts') || !existsSync(jsBin);
  if (fromSources && existsSync(tsBin)) {
    // cwd = the package, so `--import tsx` resolves from its node_modules wherever the caller runs
    return { command: process.execPath, args: ['--conditions=source', '--import', 'tsx', tsBin], cwd: packageRoot };
  }
  return { command: process.execPath, args: [jsBin], cwd: packageRoot };
}

/** A client of a running daemon; starts one (detached) unless autostart is false. */
export async function ensureDaemon(options: EnsureDaemonOptions = {}): Promise<DaemonClient> {
  const home = options.home ? resolve(options.home) : defaultHome(options.env);
  const client = new DaemonClient({ home });
  try {
    await client.status();
    return client;
  } catch (err) {
    if (!(err instanceof DaemonClientError) || err.code !== 'daemon_unavailable' || options.autostart === false)
      throw err;
  }
  const logsDir = join(home, 'logs');
  mkdirSync(logsDir, { recursive: true, mode: 0o700 });
  const startLog = join(logsDir, 'daemon-start.log');
  const out = openSync(startLog, 'a', 0o600);
  const { command: thisNode, args, cwd } = daemonCommand();
  const command = options.nodePath ?? thisNode;
  const child = spawn(command, args, {
    cwd,
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...(options.env ?? process.env), SVC_HOME: home },
  });
  let exitCode: number | null = null;
  child.once('exit', (code) => {
    exitCode = code;
  });
  child.unref();
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    try {
      await client.status();
      return client;
    } catch (err) {
      if (!(err instanceof DaemonClientError) || err.code !== 'daemon_unavailable') throw err;
    }
    // exit code 3: another daemon won the race; keep waiting for it
    if ((exitCode !== null && exitCode !== 3) || Date.now() > deadline) {
      let detail = '';
      try {
        detail = readFileSync(startLog, 'utf8').trim().split('\n').slice(-3).join(' | ');
      } catch {
        // no start log
      }
      throw new DaemonClientError(
        'daemon_unavailable',
        `The daemon did not start${exitCode !== null ? ` (exit ${exitCode})` : ''}; see ${startLog}${detail ? `: ${detail}` : ''}`,
        503,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `svc stop --local` with no daemon to ask: stops the home's local nats-server only if it proves it is ours. */
export { ProcessNotOwned, stopOwnedServer } from './local-stack/ownership.js';
export { localStackFiles, resolvePorts } from './local-stack/server-config.js';
/** Whether a dashboard host is loopback (127.0.0.0/8, ::1, localhost): the daemon refuses any other. */
export { isLoopbackHost } from './loopback.js';
