/**
 * JSON over HTTP(S) to a relay, on node:http/https so an extra CA bundle (self-hosted
 * relays with a private CA) can be given per request. Never logs bodies or headers.
 */

import type { IncomingMessage } from 'node:http';
import * as http from 'node:http';
import * as https from 'node:https';
import { MESSAGE_LIMITS, truncated } from '@svc/shared';
import { errorOfBody } from '../client/error-body.js';
import { DaemonError, RelayError } from '../errors.js';

/**
 * The most the daemon reads of one relay answer: a full pending page (100 envelopes of
 * 256 KiB) and room for its framing. Anything larger is not a valid answer, and reading
 * it unbounded would let a hostile relay exhaust the daemon's memory.
 */
export const MAX_RELAY_ANSWER_BYTES = MESSAGE_LIMITS.maxPendingLimit * MESSAGE_LIMITS.maxEnvelopeBytes + 1024 * 1024;

export interface RelayTarget {
  /** base URL, e.g. https://relay.example (the deployment's api_url) */
  baseUrl: string;
  /** PEM text of extra CAs */
  ca?: string;
  /**
   * Aborts every call to this target still in flight (an agent's session that stops): a
   * stopping daemon does not wait out the timeouts of calls whose answers nobody reads.
   */
  stopped?: AbortSignal;
}

export interface RelayResponse<T = unknown> {
  status: number;
  body: T;
  headers: IncomingMessage['headers'];
}

export interface RequestOptions {
  method: string;
  /** absolute path, e.g. /api/v1/messages */
  path: string;
  body?: unknown;
  /** bytes sent as they are (application/octet-stream) instead of a JSON body */
  raw?: Uint8Array;
  /** with raw: called as the bytes go out (sent so far, total) */
  onProgress?: (done: number, total: number) => void;
  headers?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** the answer's size limit; MAX_RELAY_ANSWER_BYTES by default */
  maxBytes?: number;
  /**
   * Not cut short by the target's stop signal: a change on the relay that must be recorded
   * here once made (a published key), so a stopping session waits for its answer.
   */
  whole?: boolean;
}

function requestFn(url: URL): typeof http.request {
  if (url.protocol === 'https:') return https.request as unknown as typeof http.request;
  if (url.protocol === 'http:') return http.request;
  throw new DaemonError('validation_failed', `unsupported URL scheme ${url.protocol}`);
}

/**
 * Opens a request and resolves with the response stream (the caller reads it).
 *
 * A request sent on a kept-alive connection that the server was closing as idle at that
 * moment is reset before any answer: the server never read it. It is sent once more, on a
 * new connection (as Node's documentation advises; a test's relay behind a proxy that
 * closes idle connections after 5 s, Node's default and the client's own, failed a send
 * with relay_unreachable under load). A body sent in pieces with progress is not.
 */
export function openRequest(target: RelayTarget, opts: RequestOptions): Promise<IncomingMessage> {
  return sendRequest(target, opts, true);
}

function sendRequest(target: RelayTarget, opts: RequestOptions, mayResend: boolean): Promise<IncomingMessage> {
  const url = new URL(opts.path, target.baseUrl);
  const payload =
    opts.raw !== undefined
      ? Buffer.from(opts.raw.buffer, opts.raw.byteOffset, opts.raw.length)
      : opts.body === undefined
        ? undefined
        : Buffer.from(JSON.stringify(opts.body));
  const type = opts.raw !== undefined ? 'application/octet-stream' : 'application/json';
  const stopped = opts.whole ? undefined : target.stopped;
  const signal = opts.signal && stopped ? AbortSignal.any([opts.signal, stopped]) : (opts.signal ?? stopped);
  return new Promise((resolve, reject) => {
    const req = requestFn(url)(url, {
      method: opts.method,
      headers: {
        accept: 'application/json',
        ...(payload ? { 'content-type': type, 'content-length': String(payload.length) } : {}),
        ...opts.headers,
      },
      ...(target.ca ? { ca: target.ca } : {}),
      ...(signal ? { signal } : {}),
    });
    if (opts.timeoutMs) {
      req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`request timed out after ${opts.timeoutMs} ms`)));
    }
    req.once('response', resolve);
    req.once('error', (err: NodeJS.ErrnoException) => {
      const idleClosed = req.reusedSocket && err.code === 'ECONNRESET' && !signal?.aborted;
      if (mayResend && idleClosed && !opts.onProgress) resolve(sendRequest(target, opts, false));
      else reject(err);
    });
    if (!payload || !opts.onProgress) {
      req.end(payload);
      return;
    }
    void writeInChunks(req, payload, opts.onProgress).catch((err: Error) => req.destroy(err));
  });
}

/** Writes the body in pieces, waiting for the socket, and reports each piece. */
async function writeInChunks(
  req: http.ClientRequest,
  payload: Buffer,
  onProgress: (done: number, total: number) => void,
): Promise<void> {
  const piece = 256 * 1024;
  for (let at = 0; at < payload.length; at += piece) {
    const chunk = payload.subarray(at, at + piece);
    if (!req.write(chunk)) await new Promise<void>((r) => req.once('drain', () => r()));
    onProgress(Math.min(payload.length, at + piece), payload.length);
  }
  req.end();
}

const tooLarge = (maxBytes: number) =>
  new DaemonError(
    'relay_answer_too_large',
    `The relay answered with more than ${maxBytes} bytes; it was not read. Ask its operator to check it.`,
  );

/** An error answer holds `{error, message}`: more than this is not one. */
export const MAX_ERROR_ANSWER_BYTES = 64 * 1024;

/**
 * The answer's body (JSON, else text), up to `maxBytes`: a longer one (declared or sent)
 * is cut off and refused.
 */
export async function readBody(res: IncomingMessage, maxBytes = MAX_RELAY_ANSWER_BYTES): Promise<unknown> {
  if (Number(res.headers['content-length'] ?? 0) > maxBytes) {
    res.destroy();
    throw tooLarge(maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of res) {
    size += (c as Buffer).length;
    if (size > maxBytes) {
      res.destroy();
      throw tooLarge(maxBytes);
    }
    chunks.push(c as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Any status; network failures become `bus_unavailable`-like 503 errors. */
export async function relayRequest<T = unknown>(target: RelayTarget, opts: RequestOptions): Promise<RelayResponse<T>> {
  let res: IncomingMessage;
  try {
    res = await openRequest(target, { timeoutMs: 35_000, ...opts });
  } catch (cause) {
    if (cause instanceof DaemonError) throw cause;
    if (endedByStop(target, opts)) throw cutShort(target, cause);
    throw new DaemonError(
      'relay_unreachable',
      `The relay at ${target.baseUrl} cannot be reached (${(cause as Error).message}): check that it runs and that this machine reaches it, then try again.`,
      { cause, status: 503 },
    );
  }
  // an error answer is `{error, message}`: no more of one is read, whatever the call's limit
  const ok = (res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300;
  const limit = opts.maxBytes ?? MAX_RELAY_ANSWER_BYTES;
  const body = await readBody(res, ok ? limit : Math.min(limit, MAX_ERROR_ANSWER_BYTES)).catch((err: unknown) => {
    throw stoppedOr(target, err, opts);
  });
  return { status: res.statusCode ?? 0, body: body as T, headers: res.headers };
}

/** A call to `target` that its stop signal ended (see RelayTarget.stopped). */
function cutShort(target: RelayTarget, cause: unknown): DaemonError {
  return new DaemonError(
    'relay_unreachable',
    `The call to the relay at ${target.baseUrl} was cut short: the agent's session stopped (the daemon is stopping, or the agent was removed).`,
    { cause, status: 503 },
  );
}

/** Whether `target`'s stop signal has ended a call made with `opts` (one that is `whole` it never ends). */
function endedByStop(target: RelayTarget, opts?: Pick<RequestOptions, 'whole'>): boolean {
  return !opts?.whole && target.stopped?.aborted === true;
}

/** `err` as it is, or, when `target`'s stop signal ended the call (an abort while its answer was read), that said. */
export function stoppedOr(target: RelayTarget, err: unknown, opts?: Pick<RequestOptions, 'whole'>): unknown {
  return endedByStop(target, opts) && !(err instanceof DaemonError) ? cutShort(target, err) : err;
}

/** 2xx or a RelayError with the relay's own code and message. */
export async function relayCall<T = unknown>(target: RelayTarget, opts: RequestOptions): Promise<T> {
  const res = await relayRequest<T>(target, opts);
  if (res.status >= 200 && res.status < 300) return res.body;
  throw toRelayError(res);
}

/** The most of a relay's error message that is kept (logged, shown, stored with a refused message). */
export const MAX_RELAY_ERROR_MESSAGE = 2000;
/** A relay's error code as the catalog writes them; anything else is reported as internal_error. */
const RELAY_ERROR_CODE = /^[a-z][a-z0-9_]{0,63}$/;

export function toRelayError(res: RelayResponse<unknown>): RelayError {
  const { code, message } = errorOfBody(res.body, res.status, 'The relay');
  return new RelayError(
    res.status,
    RELAY_ERROR_CODE.test(code) ? code : 'internal_error',
    truncated(message, MAX_RELAY_ERROR_MESSAGE),
  );
}

/** The code of a relay refusal, for retries (e.g. invalid_api_key → sign in again). */
export function relayCode(err: unknown): string | undefined {
  return err instanceof RelayError ? err.relayErrorCode : undefined;
}
