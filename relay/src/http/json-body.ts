/**
 * The JSON body parser of every route but the send route (which has its own, see
 * messages/send-body.ts). JSON is UTF-8 (RFC 8259): a body that is not valid UTF-8 is
 * refused instead of having its bad bytes silently replaced and stored.
 */
import { isUtf8 } from 'node:buffer';
import { SvcError } from '@svc/shared';
import type { FastifyInstance } from 'fastify';

export const INVALID_UTF8_MESSAGE = 'The request body is not valid UTF-8; JSON must be sent as UTF-8 text.';

export const POISONED_MESSAGE = 'The request body holds a "__proto__" or "constructor" key, which the relay refuses.';

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** The refusal of a body whose bytes are not UTF-8. */
export const invalidUtf8 = (): SvcError => new SvcError('invalid_json', INVALID_UTF8_MESSAGE);

export function installJsonBodyParser(app: FastifyInstance): void {
  const general = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const raw = body as Buffer;
    // a route whose body may be left out takes an empty one as left out (see optional-body.ts)
    if (raw.length === 0 && request.routeOptions.config?.optionalBody) {
      done(null, undefined);
      return;
    }
    if (!isUtf8(raw)) {
      done(invalidUtf8(), undefined);
      return;
    }
    const text = raw.toString('utf8');
    general(request, text, (err, value) => {
      if (err && isJson(text)) {
        // valid JSON the parser refuses on purpose (prototype poisoning): say so, not "not JSON"
        done(new SvcError('invalid_json', POISONED_MESSAGE), undefined);
        return;
      }
      done(err, value);
    });
  });
}
