/** The one place where errors become HTTP answers: `{error, message}` with a stable code. */

import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { ERROR_CATALOG, type ErrorCode, SvcError } from '@svc/shared';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { TypedApp } from '../routes/types.js';
import { RateLimitedError } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Authenticating routes answer every refusal with this one code (reason only in the log). */
    uniformError?: ErrorCode;
  }
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
  // router-level refusals, which reach us through `frameworkErrors`
  FST_ERR_MAX_PARAM_LENGTH: 'uri_too_long',
};

function classify(err: FastifyError | SvcError): { code: ErrorCode; message?: string; detail?: string } {
  if (err instanceof SvcError) return { code: err.code, message: err.message, detail: err.detail };
  if ((err as FastifyError).validation) {
    return { code: 'validation_failed', message: `invalid request: ${err.message}` };
  }
  if ((err as FastifyError).code === 'FST_ERR_BAD_URL') {
    return { code: 'bad_request', message: 'The request path does not decode (bad percent-encoding).' };
  }
  const mapped = FASTIFY_CODES[(err as FastifyError).code ?? ''];
  if (mapped) return { code: mapped };
  if (err instanceof SyntaxError) return { code: 'invalid_json' };
  const status = (err as FastifyError).statusCode;
  if (status && status >= 400 && status < 500) return { code: 'bad_request', message: err.message };
  return { code: 'internal_error' };
}

/** Fastify's refusals of a body's content type (none given where it wants one, or one it has no parser for). */
const isBodyTypeError = (err: FastifyError | SvcError): boolean => {
  const code = (err as FastifyError).code ?? '';
  return code.startsWith('FST_ERR_CTP_') || code === 'FST_ERR_ROUTE_MISSING_CONTENT_TYPE';
};

export function installErrorHandling(app: TypedApp): void {
  app.setErrorHandler((err: FastifyError | SvcError, request: FastifyRequest, reply: FastifyReply) => {
    // A request no route serves reads its body before the not-found handler runs, and a body
    // Fastify refuses there (QUERY without a content type, a type it has no parser for) would
    // otherwise answer 400 or 415 for what is a 404 or 405: the path or method is at fault.
    if (request.is404 && isBodyTypeError(err)) {
      notFound(request, reply);
      return;
    }
    let { code, message, detail } = classify(err);
    const uniform = request.routeOptions.config?.uniformError;
    // A rate limit is said as such on every route: it tells nothing about the agent.
    if (err instanceof RateLimitedError) {
      void reply.header('retry-after', String(err.retryAfterSeconds));
      request.log.info({ code, detail }, 'rate limited');
    } else if (uniform && ERROR_CATALOG[code].status < 500) {
      request.log.info({ refusal: code, reason: detail ?? message }, 'authentication refused');
      code = uniform;
      message = undefined;
    } else if (code === 'internal_error') {
      request.log.error({ err }, 'unhandled error');
    } else if (ERROR_CATALOG[code].status >= 500) {
      request.log.warn({ code, detail }, 'unavailable');
    } else if (detail) {
      request.log.info({ code, detail }, 'request refused');
    }
    const entry = ERROR_CATALOG[code];
    void reply.status(entry.status).send({ error: code, message: message ?? entry.message });
  });
  // Each route's path as a pattern, so that a path served under other methods answers 405.
  const routes: Array<{ methods: string[]; re: RegExp }> = [];
  app.addHook('onRoute', (route) => {
    const pattern = route.url
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:[^/]+/g, '[^/]+')
      .replace(/\*/g, '.*');
    routes.push({ methods: [route.method].flat(), re: new RegExp(`^${pattern}$`) });
  });
  function notFound(request: FastifyRequest, reply: FastifyReply): void {
    const path = request.url.split('?')[0] as string;
    const allowed = [...new Set(routes.filter((r) => r.re.test(path)).flatMap((r) => r.methods))];
    if (allowed.length > 0) {
      void reply
        .status(405)
        .header('allow', allowed.join(', '))
        .send({
          error: 'method_not_allowed',
          message: `${request.method} is not allowed on ${path}; use ${allowed.join(' or ')}.`,
        });
      return;
    }
    void reply.status(404).send({ error: 'not_found', message: `No route ${request.method} ${path}.` });
  }
  app.setNotFoundHandler(notFound);
}

/**
 * Fastify's `frameworkErrors` option: the router's own refusals (a path that does not
 * decode, a parameter over the length limit) otherwise answer in Fastify's shape.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { code, message } = classify(err);
  const entry = ERROR_CATALOG[code];
  if (code === 'internal_error') request.log.error({ err }, 'router failed');
  else request.log.info({ code, reason: message ?? entry.message }, 'request refused');
  // the router answers before any hook runs: the request id the others carry is set here
  void reply
    .status(entry.status)
    .header('x-request-id', request.id)
    .send({ error: code, message: message ?? entry.message });
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refused (headers too large,
 * malformed, too slow) gets the one error shape too, then the socket is closed.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const code: ErrorCode =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? 'headers_too_large'
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? 'request_timeout'
        : 'bad_request';
  const { status } = ERROR_CATALOG[code];
  // the catalog's bad_request speaks of the body; here the request line or headers are at fault
  const message = code === 'bad_request' ? 'The request is not valid HTTP/1.1.' : ERROR_CATALOG[code].message;
  const body = JSON.stringify({ error: code, message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
