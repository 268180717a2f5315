/**
 * DaemonClient: the typed Node client of the daemon socket API (./api.ts), over node:http
 * with `socketPath`. Every failure is a DaemonClientError with the daemon's `code` and
 * HTTP `status`; no daemon on the socket is `daemon_unavailable`. `ensureDaemon` starts a
 * detached daemon when none answers. This module imports only node:*, the contract and
 * the relay schemas of @svc/shared it names, so the CLI, TUI and desktop load none of the
 * daemon's internals.
 */
import { spawn } from 'node:child_process';
import { existsSync, fstatSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createConnection } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type AgentRelation,
  type ApiAnswer,
  type ApiBody,
  type ApiParams,
  type ApiQuery,
  type Cancellable,
  DAEMON_API,
  type DaemonApi,
  type DaemonApiName,
  type DaemonEvent,
  type DaemonEventStream,
} from './api.js';
import { errorOfBody } from './error-body.js';
import { defaultHome, homeProblem, socketPathFor } from './home.js';

export * from './api.js';
export { ATTACHMENT_FORMAT, type AttachmentDescriptor, attachmentText, parseDescriptor } from './attachment.js';
export { keyFingerprint } from './fingerprint.js';
export { defaultHome, homeFrom, homeProblem, socketPathFor } from './home.js';
export { addressee, conversationLabel, conversationTitle, messageText } from './message-text.js';
export { ownKeyMismatch } from './own-keys.js';
export { deregisterCommand, refusedAdvice, refusedAdviceShort } from './refused.js';
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

/** The error of a non-2xx daemon answer. */
const answerError = (status: number, body: unknown) => {
  const { code, message } = errorOfBody(body, status, 'The daemon');
  return new DaemonClientError(code, message, status);
};

export interface DaemonClientOptions {
  /** SVC_HOME of the daemon (default: $SVC_HOME or ~/.svc) */
  home?: string;
  /** overrides the socket path derived from home */
  socketPath?: string;
  /** per-request timeout, ms (default 60 s; long-polls add their wait) */
  timeoutMs?: number;
}

const unavailable = (socket: string, cause: unknown) =>
  new DaemonClientError(
    'daemon_unavailable',
    `No svc daemon answers on ${socket}; start it with \`svc start\` (${(cause as Error).message}).`,
    503,
    { cause },
  );

const enc = encodeURIComponent;

function query(params: object | undefined): string {
  const parts = Object.entries(params ?? {})
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${enc(k)}=${enc(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/** What one call of an operation sends: path parameters, query and body, as its schemas say. */
interface CallInput<K extends DaemonApiName> {
  params?: ApiParams<K>;
  query?: ApiQuery<K>;
  body?: ApiBody<K>;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export class DaemonClient implements DaemonApi {
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
    throw answerError(status, parsed);
  }

  /** Calls the operation `name` of DAEMON_API: its method, its path with `params` filled in. */
  #call<K extends DaemonApiName>(name: K, input: CallInput<K> = {}): Promise<ApiAnswer<K>> {
    const { method, path } = DAEMON_API[name];
    const params = (input.params ?? {}) as Record<string, string>;
    const filled = path.replace(/:(\w+)/g, (_, key: string) => enc(params[key] ?? ''));
    // a POST without a body sends {} (Fastify wants a JSON body with the content type)
    const body = input.body ?? (method === 'POST' || method === 'PATCH' ? {} : undefined);
    return this.request(
      method,
      `${filled}${query(input.query as object | undefined)}`,
      body,
      input.timeoutMs,
      input.signal,
    );
  }

  // --- daemon
  status() {
    return this.#call('status');
  }
  summary() {
    return this.#call('summary');
  }
  async shutdown(): Promise<void> {
    await this.#call('shutdown');
  }

  // --- deployments
  listDeployments() {
    return this.#call('listDeployments');
  }
  fetchDeployment(input: ApiBody<'fetchDeployment'>) {
    return this.#call('fetchDeployment', { body: input });
  }
  addDeployment(input: ApiBody<'addDeployment'>) {
    return this.#call('addDeployment', { body: input });
  }
  getDeployment(name: string) {
    return this.#call('getDeployment', { params: { name } });
  }
  async removeDeployment(name: string): Promise<void> {
    await this.#call('removeDeployment', { params: { name } });
  }
  renewDeployment(name: string, input: ApiBody<'renewDeployment'> = {}) {
    return this.#call('renewDeployment', { params: { name }, body: input });
  }
  auditDeployments() {
    return this.#call('auditDeployments');
  }
  resetArchive(agent: string) {
    return this.#call('resetArchive', { params: { agent } });
  }
  checkRelay(url: string) {
    return this.#call('checkRelay', { body: { url } });
  }
  archiveIntegrity(options: { agent?: string; full?: boolean } = {}) {
    return this.#call('archiveIntegrity', { query: options });
  }
  diagnoseDeployment(nameOrId: string, at?: string) {
    return this.#call('diagnoseDeployment', { params: { name: nameOrId }, query: at === undefined ? {} : { at } });
  }

  // --- agents
  register(input: ApiBody<'register'>) {
    return this.#call('register', { body: input });
  }
  registerLocal(input: ApiBody<'registerLocal'>) {
    return this.#call('registerLocal', { body: input });
  }
  listAgents() {
    return this.#call('listAgents');
  }
  getAgent(agent: string) {
    return this.#call('getAgent', { params: { agent } });
  }
  /** Revokes the agent on its relay, then forgets it here; `revoke: false` only forgets it. */
  async deregister(agent: string, options: ApiQuery<'deregister'> = {}): Promise<void> {
    await this.#call('deregister', { params: { agent }, query: options.revoke === false ? { revoke: false } : {} });
  }
  token(agent: string) {
    return this.#call('token', { params: { agent } });
  }
  keys(agent: string) {
    return this.#call('keys', { params: { agent } });
  }
  generateKeys(agent: string) {
    return this.#call('generateKeys', { params: { agent } });
  }
  uploadSigningKey(agent: string) {
    return this.#call('uploadSigningKey', { params: { agent } });
  }
  backfillKeys(agent: string, options: { dryRun?: boolean } = {}) {
    return this.#call('backfillKeys', { params: { agent }, body: options.dryRun ? { dry_run: true } : {} });
  }
  acceptPeerKey(agent: string, peerNumber: string) {
    return this.#call('acceptPeerKey', { params: { agent, number: peerNumber } });
  }

  // --- messages
  send(agent: string, input: ApiBody<'send'>) {
    return this.#call('send', { params: { agent }, body: input });
  }
  reply(agent: string, input: ApiBody<'reply'>) {
    return this.#call('reply', { params: { agent }, body: input });
  }
  inbox(agent: string, options: ApiQuery<'inbox'> = {}) {
    return this.#call('inbox', { params: { agent }, query: options });
  }
  /** `conversation` = conversation id or peer number */
  read(agent: string, conversation: string, options: ApiQuery<'read'> = {}) {
    return this.#call('read', { params: { agent, id: conversation }, query: options });
  }
  /** New inbound since the last check; `wait` long-polls up to that many seconds (max 300). */
  check(agent: string, options: ApiQuery<'check'> & Cancellable = {}) {
    const { signal, ...q } = options;
    return this.#call('check', {
      params: { agent },
      query: q,
      timeoutMs: this.#timeoutMs + (q.wait ?? 0) * 1000,
      ...(signal ? { signal } : {}),
    });
  }
  ack(agent: string, messageId: string) {
    return this.#call('ack', { params: { agent, id: messageId } });
  }
  search(agent: string, q: string, options: Omit<ApiQuery<'search'>, 'q'> = {}) {
    return this.#call('search', { params: { agent }, query: { q, ...options } });
  }
  /** Conversations, most recent first, with unread counts and the last message. */
  conversations(agent: string, options: ApiQuery<'conversations'> = {}) {
    return this.#call('conversations', { params: { agent }, query: options });
  }
  /** Own and peers' key fingerprints, changed peer keys and held envelopes. */
  trust(agent: string) {
    return this.#call('trust', { params: { agent } });
  }
  sync(agent: string) {
    return this.#call('sync', { params: { agent } });
  }
  /** Fetches, checks and decrypts a message's attachment into `dir` (absolute). */
  saveAttachment(agent: string, messageId: string, dir: string) {
    return this.#call('saveAttachment', { params: { agent, id: messageId }, body: { dir }, timeoutMs: 300_000 });
  }

  // --- conversations: groups and broadcasts, search
  createConversation(agent: string, input: ApiBody<'createConversation'>) {
    return this.#call('createConversation', { params: { agent }, body: input });
  }
  getConversation(agent: string, id: string) {
    return this.#call('getConversation', { params: { agent, id } });
  }
  invite(agent: string, id: string, input: ApiBody<'invite'>) {
    return this.#call('invite', { params: { agent, id }, body: input });
  }
  leave(agent: string, id: string) {
    return this.#call('leave', { params: { agent, id } });
  }
  conversationMessages(agent: string, id: string, options: ApiQuery<'conversationMessages'> = {}) {
    return this.#call('conversationMessages', { params: { agent, id }, query: options });
  }
  searchConversations(agent: string, input: ApiQuery<'searchConversations'> = {}) {
    return this.#call('searchConversations', { params: { agent }, query: input });
  }

  // --- the agent on its relay
  profile(agent: string) {
    return this.#call('profile', { params: { agent } });
  }
  updateProfile(agent: string, update: ApiBody<'updateProfile'>) {
    return this.#call('updateProfile', { params: { agent }, body: update });
  }
  heartbeat(agent: string, input: ApiBody<'heartbeat'> = {}) {
    return this.#call('heartbeat', { params: { agent }, body: input });
  }
  peerProfile(agent: string, peer: string) {
    return this.#call('peerProfile', { params: { agent, number: peer } });
  }
  relate(agent: string, relation: AgentRelation, peer: string) {
    return this.#call(relation, { params: { agent, number: peer } });
  }
  async unrelate(agent: string, relation: AgentRelation, peer: string): Promise<void> {
    await this.#call(relation === 'block' ? 'unblock' : 'unmute', { params: { agent, number: peer } });
  }
  blocked(agent: string) {
    return this.#call('blocked', { params: { agent } });
  }
  muted(agent: string) {
    return this.#call('muted', { params: { agent } });
  }
  report(agent: string, peer: string, input: ApiBody<'report'>) {
    return this.#call('report', { params: { agent, number: peer }, body: input });
  }
  contacts(agent: string) {
    return this.#call('contacts', { params: { agent } });
  }
  saveContact(agent: string, input: ApiBody<'saveContact'>) {
    return this.#call('saveContact', { params: { agent }, body: input });
  }
  async removeContact(agent: string, number: string): Promise<void> {
    await this.#call('removeContact', { params: { agent, number } });
  }

  /** Serves the dashboard on loopback (if not yet) and returns a fresh one-time sign-in link. */
  openDashboard(input: ApiBody<'openDashboard'> = {}) {
    return this.#call('openDashboard', { body: input });
  }

  /** The local stack's nats-server: start (with its settings), stop, or status. */
  localStack(action: 'start', input: ApiBody<'localStackStart'>): Promise<ApiAnswer<'localStackStart'>>;
  localStack(action: 'stop'): Promise<ApiAnswer<'localStackStop'>>;
  localStack(action: 'status'): Promise<ApiAnswer<'localStackStatus'>>;
  localStack(action: 'start' | 'stop' | 'status', input?: ApiBody<'localStackStart'>): Promise<unknown> {
    if (action === 'status') return this.#call('localStackStatus');
    if (action === 'stop') return this.#call('localStackStop');
    return this.#call('localStackStart', { body: input });
  }

  /**
   * Subscribes to the event stream; resolves once the daemon has accepted the subscription
   * (events after that point are delivered). Iterate it; `close()` ends it.
   */
  async events(options: ApiQuery<'events'> = {}): Promise<DaemonEventStream> {
    const res = await this.#open('GET', `${DAEMON_API.events.path}${query(options)}`, undefined, 0);
    if ((res.statusCode ?? 0) !== 200) {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      throw answerError(res.statusCode ?? 0, body);
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
  /** each call's deadline on the client returned (default 60 s): a daemon that accepts and never answers */
  callTimeoutMs?: number;
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
  const client = new DaemonClient({ home, ...(options.callTimeoutMs ? { timeoutMs: options.callTimeoutMs } : {}) });
  try {
    await client.status();
    return client;
  } catch (err) {
    if (!(err instanceof DaemonClientError) || err.code !== 'daemon_unavailable' || options.autostart === false)
      throw err;
  }
  // before anything is created under it (a home under /proc made mkdirSync never return)
  const problem = homeProblem(home);
  if (problem) throw new DaemonClientError('config_invalid', problem, 400);
  const logsDir = join(home, 'logs');
  mkdirSync(logsDir, { recursive: true, mode: 0o700 });
  const startLog = join(logsDir, 'daemon-start.log');
  const out = openSync(startLog, 'a', 0o600);
  // what this start writes: the log keeps earlier starts' lines
  const logFrom = fstatSync(out).size;
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
        const lines = readFileSync(startLog).subarray(logFrom).toString('utf8').trim().split('\n');
        const refusal = daemonRefusal(lines.at(-1) ?? '');
        if (refusal) {
          throw new DaemonClientError(
            refusal.error,
            `The daemon did not start: ${refusal.message} (see ${startLog})`,
            503,
          );
        }
        detail = lines.slice(-3).join(' | ');
      } catch (err) {
        if (err instanceof DaemonClientError) throw err;
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

/** The daemon's own refusal to start (`{"error","message"}`, the last line it writes), if that line is one. */
function daemonRefusal(line: string): { error: string; message: string } | undefined {
  if (!line.startsWith('{"error":')) return undefined;
  try {
    const { code, message } = errorOfBody(JSON.parse(line), 503, 'the daemon');
    return { error: code, message };
  } catch {
    return undefined;
  }
}

/** `svc stop --local` with no daemon to ask: stops the home's local nats-server only if it proves it is ours. */
export { ProcessNotOwned, stopOwnedServer } from './local-stack/ownership.js';
export { localStackFiles, resolvePorts } from './local-stack/server-config.js';
/** Whether a dashboard host is loopback (127.0.0.0/8, ::1, localhost): the daemon refuses any other. */
export { isLoopbackHost } from './loopback.js';
/** Waiting until a process has exited (a zombie counts as exited): `svc stop` waits for the daemon's. */
export { livePid, parsePidFile, pidFileLine, processStart } from './pid-file.js';
export { processExited, waitForExit } from './process-exit.js';
