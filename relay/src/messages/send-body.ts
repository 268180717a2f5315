/**
 * The send route's body parser. A body in canonical form, which is what every svc client
 * sends (`JSON.stringify` of sealed envelopes), takes the scanner's fast path: no JSON tree,
 * and each envelope's canonical bytes are cut from the body instead of written again.
 * Anything else goes to Fastify's own JSON parser and on to the strict general checks,
 * which give the same answers and word the errors.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { type Envelope, MESSAGE_LIMITS, scanCanonicalEnvelopes } from '@svc/shared';
import { latin1Text } from '@svc/shared/node';
import type { FastifyInstance, FastifySchema, FastifySchemaCompiler } from 'fastify';

type Validator = ReturnType<FastifySchemaCompiler<FastifySchema>>;

import { invalidUtf8 } from '../http/json-body.js';

/** Where a fast-path body keeps its envelopes' bytes: a symbol, which the body schema does not see. */
const CANONICAL = Symbol('canonical envelope bytes');

/**
 * The canonical bytes of each envelope of a body the fast path parsed (undefined for any
 * other body): views of the request body, so whoever keeps one past the request keeps the
 * whole body alive. Such a body's envelopes hold their checked header only, which is all the
 * relay reads of them: their sealed parts' text, kept for the request's life, was about a
 * fifth of what each young-generation collection copied (see "Benchmarks" in docs/messaging.md).
 */
export function canonicalBytesOf(body: unknown): readonly Buffer[] | undefined {
  return (body as { [CANONICAL]?: Buffer[] } | null)?.[CANONICAL];
}

/** Replaces the JSON parser of this (encapsulated) scope. */
export function installSendBodyParser(app: FastifyInstance): void {
  const general = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const raw = body as Buffer;
    const found = scanCanonicalEnvelopes(latin1Text(raw), MESSAGE_LIMITS.maxEnvelopesPerRequest);
    if (!found) {
      // Only a body that left the fast path (which takes ASCII only) pays for the UTF-8 check.
      if (isAscii(raw)) general(request, raw.toString('latin1'), done);
      else if (isUtf8(raw)) general(request, raw.toString('utf8'), done);
      else done(invalidUtf8(), undefined);
      return;
    }
    const envelopes = new Array<Pick<Envelope, 'header'>>(found.length);
    const bytes = new Array<Buffer>(found.length);
    for (const [i, { envelope, start, end }] of found.entries()) {
      envelopes[i] = { header: envelope.header };
      bytes[i] = raw.subarray(start, end);
    }
    done(null, { envelopes, [CANONICAL]: bytes });
  });
}

/**
 * The send route's body validator: a body the fast path parsed was checked as strictly as
 * the schema asks already, so it passes as it is; any other body goes to the scope's
 * general validator (compiled on first use, when the scope's compiler exists).
 */
export function sendBodyValidator(scope: FastifyInstance): FastifySchemaCompiler<FastifySchema> {
  return (route) => {
    let general: Validator | undefined;
    const validate: Validator = (data: unknown) => {
      if (canonicalBytesOf(data) !== undefined) return true;
      if (general === undefined) {
        const compile = scope.validatorCompiler;
        if (compile === undefined) throw new Error('the send route has no validator compiler');
        general = compile(route);
      }
      const ok = general(data);
      validate.errors = general.errors;
      return ok;
    };
    return validate;
  };
}
