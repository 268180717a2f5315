/**
 * The CLI's one door to the daemon: typed calls for each path of the socket API
 * (`@svc/daemon/client`, api.ts). Until the daemon's `DaemonClient` lands, this module
 * speaks the documented contract itself (JSON over HTTP on `$SVC_HOME/run/daemon.sock`);
 * commands depend only on the `DaemonLink` interface, so switching over touches this file.
 */
import { request } from 'node:http';
import type {
  AddDeploymentInput,
  ArchivedMessage,
  DaemonEvent,
  DaemonStatus,
  DeploymentAudit,
  DeploymentInfo,
  FetchDeploymentInput,
  KeyStatus,
  LocalAgent,
  PeerKey,
  RegisterInput,
  RelayCall,
  RenewDeploymentInput,
  ReplyInput,
  SendInput,
  SentMessage,
  SyncResult,
} from '@svc/daemon/client';
import { CliError } from './errors.js';
import { socketPath } from './home.js';

export type InboxSource = 'auto' | 'local' | 'api';

export interface DaemonLink {
  status(): Promise<DaemonStatus>;
  listDeployments(): Promise<DeploymentInfo[]>;
  fetchDeployment(input: FetchDeploymentInput): Promise<DeploymentInfo>;
  addDeployment(input: AddDeploymentInput): Promise<DeploymentInfo>;
  getDeployment(name: string): Promise<DeploymentInfo>;
  removeDeployment(name: string): Promise<void>;
  renewDeployment(name: string, input: RenewDeploymentInput): Promise<DeploymentInfo>;
  auditDeployments(): Promise<DeploymentAudit[]>;
  register(input: RegisterInput): Promise<LocalAgent>;
  listAgents(): Promise<LocalAgent[]>;
  getAgent(agent: string): Promise<LocalAgent>;
  deregister(agent: string): Promise<void>;
  token(agent: string): Promise<{ access_token: string; expires_at: string }>;
  keyStatus(agent: string): Promise<KeyStatus>;
  generateKeys(agent: string): Promise<KeyStatus>;
  uploadSigningKey(agent: string): Promise<KeyStatus>;
  acceptPeerKey(agent: string, peer: string): Promise<PeerKey>;
  send(agent: string, input: SendInput): Promise<SentMessage>;
  reply(agent: string, input: ReplyInput): Promise<SentMessage>;
  inbox(agent: string, source: InboxSource): Promise<ArchivedMessage[]>;
  conversation(agent: string, id: string, query: { last?: number; since?: string }): Promise<ArchivedMessage[]>;
  check(agent: string, query: { wait?: number; ack?: boolean }): Promise<ArchivedMessage[]>;
  ack(agent: string, messageId: string): Promise<{ message_id: string; acked_at: string }>;
  search(agent: string, query: string, limit: number): Promise<ArchivedMessage[]>;
  sync(agent: string): Promise<SyncResult>;
  relay(agent: string, call: RelayCall): Promise<{ status: number; body: unknown }>;
  events(agent: string | undefined, signal?: AbortSignal): AsyncIterable<DaemonEvent>;
}

/** Error of a daemon answer: the `{error, message}` body and the HTTP status. */
export class DaemonLinkError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, message: string, status: number) {
    super(message);
    this.name = 'DaemonLinkError';
    this.code = code;
    this.status = status;
  }
}

export interface ConnectOptions {
  home: string;
  /** start the daemon when none answers (false with --no-autostart) */
  autostart: boolean;
}

const enc = encodeURIComponent;

function unavailable(home: string, autostart: boolean, cause?: unknown): CliError {
  const sock = socketPath(home);
  const how = autostart
    ? 'this build cannot start it yet: start the daemon (svc-daemon) with the same SVC_HOME and retry'
    : 'start it (svc-daemon with the same SVC_HOME) or run the command without --no-autostart';
  return new CliError('daemon_unavailable', `No svc daemon answers on ${sock}; ${how}.`, { cause });
}

/** A link over the socket API, after checking that a daemon answers (and starting one if allowed). */
export async function connectDaemon(options: ConnectOptions): Promise<DaemonLink> {
  const link = socketLink(socketPath(options.home));
  try {
    await link.status();
  } catch (err) {
    if (err instanceof DaemonLinkError) throw err;
    throw unavailable(options.home, options.autostart, err);
  }
  return link;
}

interface RawAnswer {
  status: number;
  text: string;
}

function call(sock: string, method: string, path: string, body?: unknown): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        socketPath: sock,
        method,
        path,
        headers: {
          accept: 'application/json',
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

function answerError(answer: RawAnswer): DaemonLinkError {
  try {
    const body = JSON.parse(answer.text) as { error?: unknown; message?: unknown };
    if (typeof body.error === 'string') {
      return new DaemonLinkError(body.error, String(body.message ?? body.error), answer.status);
    }
  } catch {
    // not JSON: fall through
  }
  return new DaemonLinkError(
    'internal_error',
    `The daemon answered ${answer.status}: ${answer.text.slice(0, 200)}`,
    answer.status,
  );
}

export function socketLink(sock: string): DaemonLink {
  const json = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const answer = await call(sock, method, path, body);
    if (answer.status < 200 || answer.status > 299) throw answerError(answer);
    return (answer.text ? JSON.parse(answer.text) : {}) as T;
  };
  const qs = (params: Record<string, string | number | boolean | undefined>) => {
    const entries = Object.entries(params).filter((e): e is [string, string | number | boolean] => e[1] !== undefined);
    return entries.length === 0
      ? ''
      : `?${new URLSearchParams(entries.map(([k, v]): [string, string] => [k, String(v)])).toString()}`;
  };
  const agentPath = (agent: string, rest = '') => `/v1/agents/${enc(agent)}${rest}`;

  return {
    status: () => json('GET', '/v1/status'),
    listDeployments: () => json('GET', '/v1/deployments'),
    fetchDeployment: (input) => json('POST', '/v1/deployments/fetch', input),
    addDeployment: (input) => json('POST', '/v1/deployments/add', input),
    getDeployment: (name) => json('GET', `/v1/deployments/${enc(name)}`),
    removeDeployment: async (name) => {
      await json('DELETE', `/v1/deployments/${enc(name)}`);
    },
    renewDeployment: (name, input) => json('POST', `/v1/deployments/${enc(name)}/renew`, input),
    auditDeployments: () => json('GET', '/v1/deployments-audit'),
    register: (input) => json('POST', '/v1/agents/register', input),
    listAgents: () => json('GET', '/v1/agents'),
    getAgent: (agent) => json('GET', agentPath(agent)),
    deregister: async (agent) => {
      await json('DELETE', agentPath(agent));
    },
    token: (agent) => json('POST', agentPath(agent, '/token')),
    keyStatus: (agent) => json('GET', agentPath(agent, '/keys')),
    generateKeys: (agent) => json('POST', agentPath(agent, '/keys/generate')),
    uploadSigningKey: (agent) => json('POST', agentPath(agent, '/keys/upload-signing')),
    acceptPeerKey: (agent, peer) => json('POST', agentPath(agent, `/peers/${enc(peer)}/accept-key`)),
    send: (agent, input) => json('POST', agentPath(agent, '/send'), input),
    reply: (agent, input) => json('POST', agentPath(agent, '/reply'), input),
    inbox: (agent, source) => json('GET', agentPath(agent, `/inbox${qs({ source })}`)),
    conversation: (agent, id, q) =>
      json('GET', agentPath(agent, `/conversations/${enc(id)}/messages${qs({ last: q.last, since: q.since })}`)),
    check: (agent, q) => json('GET', agentPath(agent, `/check${qs({ wait: q.wait, ack: q.ack })}`)),
    ack: (agent, id) => json('POST', agentPath(agent, `/messages/${enc(id)}/ack`)),
    search: (agent, q, limit) => json('GET', agentPath(agent, `/search${qs({ q, limit })}`)),
    sync: (agent) => json('POST', agentPath(agent, '/sync')),
    relay: (agent, relayCall) => json('POST', agentPath(agent, '/relay'), relayCall),
    events: (agent, signal) => eventStream(sock, `/v1/events${qs({ agent })}`, signal),
  };
}

async function* eventStream(sock: string, path: string, signal?: AbortSignal): AsyncGenerator<DaemonEvent> {
  const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
    const req = request({ socketPath: sock, method: 'GET', path, headers: { accept: 'application/x-ndjson' }, signal });
    req.on('response', resolve);
    req.on('error', reject);
    req.end();
  });
  if ((res.statusCode ?? 0) >= 300) {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    throw answerError({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
  }
  let buffered = '';
  try {
    for await (const chunk of res) {
      buffered += (chunk as Buffer).toString('utf8');
      let nl = buffered.indexOf('\n');
      while (nl >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (line) yield JSON.parse(line) as DaemonEvent;
        nl = buffered.indexOf('\n');
      }
    }
  } catch (err) {
    if (signal?.aborted) return;
    throw err;
  }
}
