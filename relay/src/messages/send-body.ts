/**
 * The send route's body parser. A body in canonical form, which is what every svc client
 * sends (`JSON.stringify` of sealed envelopes), takes the scanner's fast path: no JSON tree,
 * and each envelope's canonical bytes are cut from the body instead of written again.
 * Anything else goes to Fastify's own JSON parser and on to the strict general checks,
 * which give the same answers and word the errors.
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { MESSAGE_LIMITS, scanCanonicalEnvelopes } from '@svc/shared';
import type { FastifyInstance } from 'fastify';
import { invalidUtf8 } from '../http/json-body.js';

const canonicalBytes = new WeakMap<object, Buffer>();

/**
 * The canonical bytes of an envelope the fast path found (undefined for any other): a view
 * of the request body, so whoever keeps it past the request keeps the whole body alive.
 */
export function canonicalBytesOf(envelope: object): Buffer | undefined {
  return canonicalBytes.get(envelope);
}

/** Replaces the JSON parser of this (encapsulated) scope. */
export function installSendBodyParser(app: FastifyInstance): void {
  const general = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const raw = body as Buffer;
    // Byte offsets equal string offsets in latin1; non-ASCII text never scans.
    const text = raw.toString('latin1');
    const found = scanCanonicalEnvelopes(text, MESSAGE_LIMITS.maxEnvelopesPerRequest);
    if (!found) {
      // Only a body that left the fast path (which takes ASCII only) pays for the UTF-8 check.
      if (isAscii(raw)) general(request, text, done);
      else if (isUtf8(raw)) general(request, raw.toString('utf8'), done);
      else done(invalidUtf8(), undefined);
      return;
    }
    const envelopes = found.map(({ envelope, start, end }) => {
      canonicalBytes.set(envelope, raw.subarray(start, end));
      return envelope;
    });
    done(null, { envelopes });
  });
}
