/**
 * HTTP features the relay does not serve, refused in the one error shape: Node's HTTP server
 * otherwise answers some of them itself, with no body (a request without `Host`: an empty
 * 400; an `Expect` other than 100-continue: an empty 417; `CONNECT`: the connection closed
 * with no answer), and takes others as if they were absent (a compressed body read as
 * plain bytes).
 */
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_CATALOG, SvcError } from '@svc/shared';
import type { FastifyRequest } from 'fastify';

/**
 * Node's server options the checks below need: requests without `Host` reach the relay
 * (which refuses them itself).
 */
export const PROTOCOL_SERVER_OPTIONS = { requireHostHeader: false } as const;

/**
 * Throws the refusal of a request using what the relay does not serve; called first in an
 * `onRequest` hook, so the refusal has a request id and a log line like any other.
 */
export function refuseUnservedProtocol(request: FastifyRequest): void {
  const { headers } = request;
  if (headers.host === undefined && request.raw.httpVersion === '1.1') {
    throw new SvcError('bad_request', 'An HTTP/1.1 request must carry a Host header.');
  }
  const expect = headers.expect;
  if (expect !== undefined && expect.trim().toLowerCase() !== '100-continue') {
    throw new SvcError('bad_request', `Expect: ${JSON.stringify(expect)} is not supported; only 100-continue is.`);
  }
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new SvcError(
      'unsupported_media_type',
      `Content-Encoding ${JSON.stringify(encoding)} is not supported; send the body uncompressed.`,
    );
  }
}

/** Hands requests Node would answer itself to the application, and answers CONNECT. */
export function installProtocolListeners(server: Server): void {
  // Without a listener Node answers an unknown expectation with an empty 417; with one,
  // the request goes to the application like any other (and is refused there).
  server.on('checkExpectation', (req: IncomingMessage, res) => server.emit('request', req, res));
  // Without a listener Node closes a CONNECT's connection without a word.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    const { status } = ERROR_CATALOG.method_not_allowed;
    const body = JSON.stringify({
      error: 'method_not_allowed',
      message: 'CONNECT is not served here: this is no proxy.',
    });
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.end();
    socket.on('error', () => undefined);
  });
}
