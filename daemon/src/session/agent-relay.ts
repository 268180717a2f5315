/** Calls to the relay as one agent: adds the access JWT, retries once on a stale token. */

import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/store.js';
import { DaemonError } from '../errors.js';
import {
  MAX_ERROR_ANSWER_BYTES,
  openRequest,
  type RelayResponse,
  type RelayTarget,
  type RequestOptions,
  readBody,
  relayRequest,
  toRelayError,
} from '../relay/http.js';
import type { Vault } from '../vault/index.js';
import { Credentials } from './credentials.js';

export const STREAM_IDLE_MS = 45_000;

export class AgentRelay {
  readonly target: RelayTarget;
  readonly credentials: Credentials;

  constructor(target: RelayTarget, credentials: Credentials) {
    this.target = target;
    this.credentials = credentials;
  }

  /** Any status (the `relay` proxy passes it through). */
  async request<T = unknown>(opts: RequestOptions): Promise<RelayResponse<T>> {
    const send = async () =>
      relayRequest<T>(this.target, {
        ...opts,
        headers: { ...opts.headers, authorization: await this.credentials.bearer() },
      });
    let res = await send();
    if (res.status === 401 && (res.body as { error?: string } | undefined)?.error === 'invalid_token') {
      this.credentials.invalidate();
      res = await send();
    }
    return res;
  }

  /** 2xx body, else the relay's error. */
  async call<T = unknown>(opts: RequestOptions): Promise<T> {
    const res = await this.request<T>(opts);
    if (res.status >= 200 && res.status < 300) return res.body;
    throw toRelayError(res);
  }

  /** Opens the SSE message stream after `cursor`. */
  async openStream(cursor: number, signal: AbortSignal) {
    const res = await openRequest(this.target, {
      method: 'GET',
      path: '/api/v1/messages/stream',
      headers: {
        accept: 'text/event-stream',
        authorization: await this.credentials.bearer(),
        'last-event-id': String(cursor),
      },
      signal,
    });
    if (res.statusCode !== 200) {
      const body = await readBody(res, MAX_ERROR_ANSWER_BYTES);
      if (res.statusCode === 401) this.credentials.invalidate();
      throw toRelayError({ status: res.statusCode ?? 0, body, headers: res.headers });
    }
    // the relay writes a keepalive every 15 s: silence means a dead path (no FIN), so reconnect
    const socket = res.socket;
    const idle = () => res.destroy(new Error('relay stream idle'));
    socket?.setTimeout(STREAM_IDLE_MS, idle);
    // a stream the relay ends leaves its connection kept alive, for the next call and the next
    // stream: its watch goes with it (each stream's would pile up on that one socket)
    res.once('close', () => socket?.removeListener('timeout', idle));
    return res;
  }
}

/**
 * An agent's calls to its relay (and the credentials they sign in with): `stopped` aborts
 * every call still in flight (see RelayTarget.stopped).
 */
export function agentRelay(
  agent: AgentConfig | (() => AgentConfig),
  opts: { ca?: string | undefined; vault: Vault; log: Logger; stopped?: AbortSignal },
): { credentials: Credentials; relay: AgentRelay } {
  const config = typeof agent === 'function' ? agent : () => agent;
  const target = {
    baseUrl: config().api_url,
    ...(opts.ca ? { ca: opts.ca } : {}),
    ...(opts.stopped ? { stopped: opts.stopped } : {}),
  };
  const credentials = new Credentials(config, target, opts.vault, opts.log);
  return { credentials, relay: new AgentRelay(target, credentials) };
}

export const notConnected = (agent: string) =>
  new DaemonError('internal_error', `agent ${agent} has no relay session`, { status: 503 });
