/** The one place where errors become HTTP answers: `{error, message}` with a stable code. */
import { ERROR_CATALOG, type ErrorCode, SvcError } from '@svc/shared';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { TypedApp } from '../routes/types.js';

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
};

function classify(err: FastifyError | SvcError): { code: ErrorCode; message?: string; detail?: string } {
  if (err instanceof SvcError) return { code: err.code, message: err.message, detail: err.detail };
  if ((err as FastifyError).validation) {
    return { code: 'validation_failed', message: `invalid request: ${err.message}` };
  }
  const mapped = FASTIFY_CODES[(err as FastifyError).code ?? ''];
  if (mapped) return { code: mapped };
  if (err instanceof SyntaxError) return { code: 'invalid_json' };
  const status = (err as FastifyError).statusCode;
  if (status && status >= 400 && status < 500) return { code: 'bad_request', message: err.message };
  return { code: 'internal_error' };
}

export function installErrorHandling(app: TypedApp): void {
  app.setErrorHandler((err: FastifyError | SvcError, request: FastifyRequest, reply: FastifyReply) => {
    let { code, message, detail } = classify(err);
    const uniform = request.routeOptions.config?.uniformError;
    if (uniform && ERROR_CATALOG[code].status < 500) {
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
  app.setNotFoundHandler((request, reply) => {
    void reply
      .status(404)
      .send({ error: 'not_found', message: `No route ${request.method} ${request.url.split('?')[0]}.` });
  });
}
