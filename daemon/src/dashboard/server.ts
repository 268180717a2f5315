/**
 * The dashboard's HTTP server: the built page and a narrow door to the socket API, on a
 * loopback TCP port. Every request passes the checks of security.ts (Host, Origin,
 * session cookie); API calls are forwarded in-process (`inject`) to the socket app, so
 * the page gets exactly the answers the CLI gets and never more than allowlist.ts lets
 * through. The page never holds a key: sealing and opening stay in the daemon.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { DaemonEvent } from '../client/api.js';
import { BODY_TOO_LARGE } from '../errors.js';
import type { EventBus } from '../events.js';
import { apiAllowed, bodyAllowed, PAGE_METHODS } from './allowlist.js';
import {
  cookieValue,
  hostAllowed,
  isStateChanging,
  originAllowed,
  PAGE_KEY_HEADER,
  pageKeyOf,
  SECURITY_HEADERS,
  sessionCookie,
  sessionCookieName,
  urlHost,
} from './security.js';
import type { DashboardSessions } from './sessions.js';

/** Where `npm run build` puts the page (daemon/dist/dashboard-page), from src/ or dist/ alike. */
export const DEFAULT_ASSETS_DIR = new URL('../../dist/dashboard-page/', import.meta.url).pathname;

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.map': 'application/json',
};

const KEEPALIVE_MS = 15_000;

export interface DashboardServerOptions {
  /** the socket API app; page calls are injected into it */
  api: FastifyInstance;
  events: EventBus;
  sessions: DashboardSessions;
  log: Logger;
  assetsDir?: string;
  /** registers a hook run when the daemon closes; returns its remover */
  onClose: (fn: () => void) => () => void;
}

/** Reads the built page once; an unbuilt page is served as a page that says so. */
function loadAssets(dir: string): Map<string, { type: string; body: Buffer }> {
  const files = new Map<string, { type: string; body: Buffer }>();
  if (!existsSync(join(dir, 'index.html'))) return files;
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const type = MIME[extname(name)];
    if (!type) continue;
    files.set(`/${name.split('\\').join('/')}`, { type, body: readFileSync(join(dir, name)) });
  }
  return files;
}

const NOT_BUILT = Buffer.from(
  '<!doctype html><meta charset="utf-8"><title>svc dashboard</title><p>The dashboard page is not built: run <code>npm run build</code> in the svc checkout, then <code>svc dashboard</code> again.</p>',
);

export class DashboardServer {
  readonly #o: DashboardServerOptions;
  readonly #app: FastifyInstance;
  readonly #assets: Map<string, { type: string; body: Buffer }>;
  #host = '127.0.0.1';
  #port = 0;
  /** the event streams open on this server: they end when it closes, not only with the daemon */
  readonly #streams = new Set<{ end: () => void }>();

  constructor(options: DashboardServerOptions) {
    this.#o = options;
    this.#assets = loadAssets(options.assetsDir ?? DEFAULT_ASSETS_DIR);
    this.#app = this.#build();
  }

  get host(): string {
    return this.#host;
  }

  get port(): number {
    return this.#port;
  }

  /** The page's origin, e.g. http://127.0.0.1:8191 */
  get baseUrl(): string {
    return `http://${urlHost(this.#host)}:${this.#port}`;
  }

  /** A sign-in link with a fresh one-time token. */
  launchUrl(): string {
    return `${this.baseUrl}/auth?token=${this.#o.sessions.mintToken()}`;
  }

  async listen(host: string, port: number): Promise<void> {
    await this.#app.listen({ host, port });
    const address = this.#app.server.address();
    this.#host = host;
    this.#port = typeof address === 'object' && address ? address.port : port;
  }

  /**
   * Stops serving: open event streams end and every connection is closed. A page's event
   * stream never ends by itself, and closing waited on it for ever: a move to another
   * port (`svc dashboard --port`) hung, and every launch after it queued behind.
   */
  async close(): Promise<void> {
    for (const stream of this.#streams) stream.end();
    const closing = this.#app.close();
    this.#app.server.closeAllConnections();
    await closing;
  }

  /** For tests: the app, to inject requests without a socket. */
  get app(): FastifyInstance {
    return this.#app;
  }

  #build(): FastifyInstance {
    const app = Fastify({
      loggerInstance: this.#o.log as FastifyBaseLogger,
      bodyLimit: 2 * 1024 * 1024,
      // URLs carry the launch token and search terms: log our own line without them
      logController: new LogController({ disableRequestLogging: true }),
    });
    const refuse = (reply: FastifyReply, status: 401 | 403, code: string, message: string) =>
      reply.status(status).type('application/json').send({ error: code, message });

    app.addHook('onRequest', async (request, reply) => {
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) reply.header(k, v);
      // DNS rebinding: a foreign name that resolves to loopback still says its own name here
      if (!hostAllowed(request.headers.host, this.#port, this.#host)) {
        request.log.warn({ path: request.url.split('?')[0] }, 'dashboard request with a foreign Host refused');
        return refuse(reply, 403, 'dashboard_forbidden', 'This address is not the dashboard: open it on 127.0.0.1.');
      }
      if (!request.url.startsWith('/api/')) return;
      reply.header('cache-control', 'no-store');
      const origin = request.headers.origin;
      const site = request.headers['sec-fetch-site'];
      if (
        (isStateChanging(request.method) || origin !== undefined
          ? !originAllowed(origin, this.#port, this.#host)
          : false) ||
        (typeof site === 'string' && site !== 'same-origin' && site !== 'none')
      ) {
        request.log.warn({ method: request.method, path: request.url.split('?')[0] }, 'cross-origin request refused');
        return refuse(
          reply,
          403,
          'dashboard_forbidden',
          'Refused: this request does not come from the dashboard page.',
        );
      }
      const session = cookieValue(request.headers.cookie, sessionCookieName(this.#port));
      if (!this.#o.sessions.valid(session, pageKeyOf(request.url, request.headers[PAGE_KEY_HEADER]))) {
        return refuse(
          reply,
          401,
          'dashboard_session_required',
          'This browser is not signed in to the dashboard: open the link that `svc dashboard` prints.',
        );
      }
    });
    app.addHook('onResponse', async (request, reply) => {
      request.log.info(
        { method: request.method, path: request.url.split('?')[0], status: reply.statusCode },
        'dashboard request',
      );
    });
    app.setNotFoundHandler((_request, reply) =>
      reply.status(404).type('application/json').send({ error: 'not_found', message: 'No such page.' }),
    );
    app.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, request, reply) => {
      if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
        return reply.status(413).type('application/json').send(BODY_TOO_LARGE);
      const status = err.statusCode && err.statusCode < 500 ? err.statusCode : 500;
      if (status >= 500) request.log.error({ err }, 'dashboard request failed');
      return reply
        .status(status)
        .type('application/json')
        .send(
          status >= 500
            ? { error: 'internal_error', message: 'The daemon failed unexpectedly; see its log.' }
            : { error: 'bad_request', message: err.message },
        );
    });

    // the one-time link: trade the token for the session cookie and the page key, then drop
    // it from the address bar; the key goes in the fragment, which no server is ever sent
    app.get('/auth', async (request, reply) => {
      const signed = this.#o.sessions.redeem((request.query as { token?: string }).token);
      if (!signed) {
        return reply
          .status(401)
          .type('text/plain; charset=utf-8')
          .send('This dashboard link was used already or has expired. Run `svc dashboard` for a new one.\n');
      }
      return reply
        .header('set-cookie', sessionCookie(this.#port, signed.session))
        .redirect(`/#key=${signed.pageKey}`, 303);
    });

    const page = (path: string) => (_request: unknown, reply: FastifyReply) => {
      const file = this.#assets.get(path);
      if (!file) return reply.status(503).type('text/html; charset=utf-8').send(NOT_BUILT);
      return reply.type(file.type).header('cache-control', 'no-cache').send(file.body);
    };
    app.get('/', page('/index.html'));
    app.get('/assets/*', (request, reply) => {
      const path = request.url.split('?')[0]!.slice('/assets'.length);
      if (!this.#assets.has(path) || path === '/index.html') {
        return reply.status(404).type('application/json').send({ error: 'not_found', message: 'No such file.' });
      }
      return page(path)(request, reply);
    });

    app.get('/api/events', (request, reply) => this.#events(request.raw.socket, reply));

    app.route({
      method: PAGE_METHODS,
      url: '/api/v1/*',
      handler: async (request, reply) => {
        const [pathPart, query] = request.url.slice('/api'.length).split(/\?(.*)/s, 2) as [string, string | undefined];
        let path: string;
        try {
          path = decodeURI(pathPart);
        } catch {
          return refuse(reply, 403, 'dashboard_forbidden', 'This call is not open to the dashboard.');
        }
        if (!apiAllowed(request.method, path)) {
          request.log.warn({ method: request.method, path }, 'dashboard call outside its allowlist refused');
          return refuse(reply, 403, 'dashboard_forbidden', 'This call is not open to the dashboard.');
        }
        if (!bodyAllowed(request.body)) {
          request.log.warn({ method: request.method, path }, 'dashboard send of a file from disk refused');
          return refuse(
            reply,
            403,
            'dashboard_forbidden',
            'The dashboard cannot send files from disk; use `svc send --file`.',
          );
        }
        const answer = await this.#o.api.inject({
          method: request.method as (typeof PAGE_METHODS)[number],
          url: `${pathPart}${query ? `?${query}` : ''}`,
          ...(request.method === 'POST'
            ? { payload: JSON.stringify(request.body ?? {}), headers: { 'content-type': 'application/json' } }
            : {}),
        });
        return reply.status(answer.statusCode).type('application/json').send(answer.body);
      },
    });
    return app;
  }

  /** Server-sent events: each DaemonEvent as one `data:` line, until the page goes away. */
  #events(socket: { setKeepAlive?: (on: boolean) => void }, reply: FastifyReply): void {
    socket.setKeepAlive?.(true);
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    raw.write(': connected\n\n');
    const off = this.#o.events.subscribe((event: DaemonEvent) => {
      if (!raw.writableEnded) raw.write(`data: ${JSON.stringify(event)}\n\n`);
    });
    const keepalive = setInterval(() => raw.write(': keepalive\n\n'), KEEPALIVE_MS);
    const stream = { end: () => raw.end() };
    this.#streams.add(stream);
    const unhook = this.#o.onClose(stream.end);
    raw.once('close', () => {
      clearInterval(keepalive);
      off();
      unhook();
      this.#streams.delete(stream);
    });
  }
}
