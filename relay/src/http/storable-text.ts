/**
 * Text the ledger can store as sent: no U+0000 (PostgreSQL's text cannot hold it, and its
 * refusal surfaced as a 500) and no lone surrogate (escaped in JSON, `\ud800` is valid JSON
 * but no UTF-8: SQLite stored bytes that are not UTF-8, PostgreSQL a replacement character,
 * so the same request stored different text). Refused the same way on both ledgers, in
 * every body, path parameter and query value, before any route sees them.
 */
import { SvcError } from '@svc/shared';
import type { FastifyInstance } from 'fastify';
import { canonicalBytesOf } from '../messages/send-body.js';

const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const refusal = (where: string): SvcError =>
  new SvcError('validation_failed', `The ${where} holds U+0000 or a lone UTF-16 surrogate, which no text may hold.`);

/** True when some string in `value` (keys included), however deep, cannot be stored. */
export function holdsUnstorableText(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) return true;
    } else if (typeof v === 'object' && v !== null && !ArrayBuffer.isView(v)) {
      for (const [k, inner] of Object.entries(v)) {
        if (UNSTORABLE.test(k)) return true;
        stack.push(inner);
      }
    }
  }
  return false;
}

/** The body is checked once parsed (the parser takes any JSON); path and query first of all. */
export function installStorableTextPolicy(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (holdsUnstorableText(request.params)) throw refusal('request path');
    if (holdsUnstorableText(request.query)) throw refusal('query string');
  });
  app.addHook('preValidation', async (request) => {
    // a send body on the fast path was scanned character by character against the envelope's patterns
    if (canonicalBytesOf(request.body) !== undefined) return;
    if (holdsUnstorableText(request.body)) throw refusal('request body');
  });
}
