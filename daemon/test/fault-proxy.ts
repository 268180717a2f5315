/**
 * A stand-in for a hostile relay in front of the real one: it forwards everything, and a
 * test can make it drop one posted envelope, hold one back until the next post (reorder),
 * deliver one stream event twice (duplicate), refuse posts as if the relay were down, alter
 * blobs, answer an agent's key lookup with a directory entry of its own (a substituted
 * key), rewrite the relay's answer to an enrollment (an agent relabelled), write stream
 * events of its own making, answer receipt reads with its own pages, or answer the fetch of
 * a blob itself (any bytes, any size, a stall, a cut). It sees only what the relay sees:
 * sealed envelopes and their headers.
 */
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { type Envelope, parseEnvelope } from '@svc/shared';
import { freePort } from '@svc/test-harness';
import type { TestDaemon } from '@svc/test-harness/daemon';
import {
  type DaemonsOnRelay,
  type DaemonsOnRelayOptions,
  startDaemonsOnRelay,
} from '@svc/test-harness/daemons-on-relay';
import Database from 'better-sqlite3';

export type EnvelopeMatch = (e: Envelope) => boolean;

/** What the proxy answers to a post of envelopes in the relay's place. */
export type SendAnswer = { status: number; body: unknown } | 'cut' | 'hang';

function answerSend(res: ServerResponse, answer: SendAnswer): void {
  // the relay took it and its answer never comes (the connection stays open until closed)
  if (answer === 'hang') return;
  if (answer === 'cut') {
    // the relay's answer starts, then the connection is gone
    res.writeHead(202, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"results":[', () => res.socket?.destroy());
    return;
  }
  res.writeHead(answer.status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(answer.body));
}

export interface FaultProxy {
  url: string;
  /** every envelope that reached the relay through the proxy, in order */
  posted: Envelope[];
  /** the next posted envelope that matches is never forwarded (the relay answers for it as accepted) */
  drop(match: EnvelopeMatch): void;
  /** the next posted envelope that matches is forwarded after the envelopes of the following post */
  hold(match: EnvelopeMatch): void;
  /** the next stream event whose envelope matches is written twice */
  duplicate(match: EnvelopeMatch): void;
  /** while set, posts of envelopes answer 503 (the relay seems down) */
  down: boolean;
  /** while set, acknowledgements (POST /api/v1/messages/:id/ack) answer 503, so no receipt is written */
  acksDown: boolean;
  /** the next post of envelopes is refused for good (400) */
  refuseNext: boolean;
  /** while set, a post of envelopes it matches is refused for good (400) */
  refuseWhen: ((envelopes: Envelope[]) => boolean) | undefined;
  /** while set, a post of envelopes gets the answer this gives (if any) before the relay sees it */
  beforeSend: ((envelopes: Envelope[]) => { status: number; error: string } | undefined) | undefined;
  /**
   * while set, a post of envelopes goes on to the relay (less what `drop` takes) and is then
   * answered by what this gives (if anything), not the relay: a status and body, `cut`
   * (the answer's head, then the connection dropped) or `hang` (no answer at all)
   */
  afterSend: ((envelopes: Envelope[]) => SendAnswer | undefined) | undefined;
  /** while set, reads of the pending inbox and event stream opens get no answer at all (a relay that hangs) */
  readsHang: boolean;
  /** ends readsHang: the connections it left hanging are cut, so the daemon asks again at once */
  unhang(): void;
  /** while set, reads of the pending inbox (GET /api/v1/messages/pending) get this page for their `after` */
  pending: ((after: number) => unknown) | undefined;
  /** how many pending reads the proxy answered itself */
  pendingReads: number;
  /** while set, every attachment blob served has one byte flipped */
  tamperBlobs: boolean;
  /** fetches of these blob ids (GET /api/v1/blobs/:id) are answered by this, not the relay */
  blobAnswers: Map<string, (res: ServerResponse) => void>;
  /** key lookups (GET /api/v1/agents/:number/keys) of these agent numbers are answered with this, not the relay's */
  keys: Map<string, unknown>;
  /** key lookups of these agent numbers are refused with this status (an error answer of the relay's shape) */
  keyErrors: Map<string, number>;
  /** while set, the relay's answers to enrollments are passed through this before the daemon gets them */
  rewriteEnrollment: ((answer: Record<string, unknown>) => Record<string, unknown>) | undefined;
  /**
   * writes an `envelope` event with this item into every open stream, under the last cursor
   * the relay gave it (or the item's own `cursor`, when it has one: any value)
   */
  inject(item: Record<string, unknown>): void;
  /** ends every open event stream, as a relay that closes them does (the daemons connect again) */
  endStreams(): void;
  /** how many event streams were opened through the proxy, and the Last-Event-ID each was opened with */
  streamOpens: Array<string | undefined>;
  /** requests (`METHOD /path`, no query) answered by this, not the relay */
  answers: Map<string, (res: ServerResponse) => void>;
  /** while set, receipt reads (GET /api/v1/receipts) get this page for their `since`, not the relay's */
  receipts: ((since: number) => unknown) | undefined;
  /** how many receipt reads the proxy answered itself */
  receiptReads: number;
  close(): Promise<void>;
}

const body = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

export async function startFaultProxy(target: number): Promise<FaultProxy> {
  const port = await freePort();
  let toDrop: EnvelopeMatch | undefined;
  let toHold: EnvelopeMatch | undefined;
  let toDuplicate: EnvelopeMatch | undefined;
  let held: unknown[] = [];
  /** open event streams, each with the last cursor the relay wrote to it */
  const streams = new Map<ServerResponse, number>();
  /** the requests readsHang left unanswered */
  const hung: ServerResponse[] = [];
  const proxy: FaultProxy = {
    url: `http://127.0.0.1:${port}`,
    posted: [],
    drop: (m) => {
      toDrop = m;
    },
    hold: (m) => {
      toHold = m;
    },
    duplicate: (m) => {
      toDuplicate = m;
    },
    down: false,
    acksDown: false,
    refuseNext: false,
    refuseWhen: undefined,
    beforeSend: undefined,
    afterSend: undefined,
    readsHang: false,
    unhang: () => {
      proxy.readsHang = false;
      for (const res of hung.splice(0)) res.socket?.destroy();
    },
    pending: undefined,
    pendingReads: 0,
    tamperBlobs: false,
    blobAnswers: new Map(),
    keys: new Map(),
    keyErrors: new Map(),
    rewriteEnrollment: undefined,
    inject: (item) => {
      for (const [res, cursor] of streams) {
        // a stream the relay has not answered yet is not open: the event would go out before its head
        if (!res.headersSent) continue;
        res.write(`event: envelope\nid: ${cursor}\ndata: ${JSON.stringify({ cursor, ...item })}\n\n`);
      }
    },
    endStreams: () => {
      for (const res of streams.keys()) res.end();
    },
    streamOpens: [],
    answers: new Map(),
    receipts: undefined,
    receiptReads: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const forward = (req: IncomingMessage, payload: Buffer, onAnswer: (answer: IncomingMessage) => void) => {
    const headers = { ...req.headers, 'content-length': String(payload.length) };
    const up = request({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers }, onAnswer);
    up.on('error', () => undefined);
    up.end(payload);
    return up;
  };

  const server: Server = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const payload = await body(req);
    const own = proxy.answers.get(`${req.method} ${path}`);
    if (own) {
      own(res);
      return;
    }
    const lookup = req.method === 'GET' ? /^\/api\/v1\/agents\/([^/]+)\/keys$/.exec(path) : null;
    const refusal = lookup ? proxy.keyErrors.get(decodeURIComponent(lookup[1] as string)) : undefined;
    if (refusal !== undefined) {
      res.writeHead(refusal, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'uri_too_long', message: 'refused by the test proxy' }));
      return;
    }
    const substitute = lookup ? proxy.keys.get(decodeURIComponent(lookup[1] as string)) : undefined;
    if (substitute !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(substitute));
      return;
    }
    // the request is taken and never answered: the connection stays open until the proxy closes
    if (
      proxy.readsHang &&
      req.method === 'GET' &&
      (path === '/api/v1/messages/pending' || path === '/api/v1/messages/stream')
    ) {
      hung.push(res);
      return;
    }
    if (req.method === 'GET' && path === '/api/v1/messages/pending' && proxy.pending) {
      proxy.pendingReads++;
      const after = Number(new URL(req.url ?? '/', 'http://proxy').searchParams.get('after') ?? 0);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(proxy.pending(after)));
      return;
    }
    if (req.method === 'GET' && path === '/api/v1/receipts' && proxy.receipts) {
      proxy.receiptReads++;
      const since = Number(new URL(req.url ?? '/', 'http://proxy').searchParams.get('since') ?? 0);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(proxy.receipts(since)));
      return;
    }
    const rewrite = proxy.rewriteEnrollment;
    if (req.method === 'POST' && path === '/api/v1/enrollment' && rewrite) {
      forward(req, payload, (answer) => {
        void body(answer).then((bytes) => {
          const ok = answer.statusCode === 201;
          res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json' });
          res.end(ok ? JSON.stringify(rewrite(JSON.parse(bytes.toString('utf8')))) : bytes);
        });
      });
      return;
    }
    if (req.method === 'POST' && proxy.acksDown && /^\/api\/v1\/messages\/[^/]+\/ack$/.test(path)) {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'service_unavailable', message: 'down (test)' }));
      return;
    }
    if (req.method === 'POST' && path === '/api/v1/messages') {
      if (proxy.down) {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'service_unavailable', message: 'down (test)' }));
        return;
      }
      const all = (JSON.parse(payload.toString('utf8')) as { envelopes: unknown[] }).envelopes;
      if (proxy.refuseNext || proxy.refuseWhen?.(all.map((raw) => parseEnvelope(raw)))) {
        proxy.refuseNext = false;
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'validation_failed', message: 'refused (test)' }));
        return;
      }
      const early = proxy.beforeSend?.(all.map((raw) => parseEnvelope(raw)));
      if (early) {
        res.writeHead(early.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: early.error, message: `answered by the test proxy (${early.status})` }));
        return;
      }
      const instead = proxy.afterSend?.(all.map((raw) => parseEnvelope(raw)));
      const forwarded: unknown[] = [];
      const later: unknown[] = [];
      for (const raw of all) {
        const e = parseEnvelope(raw);
        if (toDrop?.(e)) {
          toDrop = undefined;
          continue;
        }
        if (toHold?.(e)) {
          toHold = undefined;
          later.push(raw);
          continue;
        }
        forwarded.push(raw);
      }
      forwarded.push(...held);
      held = later;
      for (const raw of forwarded) proxy.posted.push(parseEnvelope(raw));
      const answered = all.map((raw) => {
        const { message_id, recipient } = parseEnvelope(raw).header;
        return { message_id, recipient, status: 'accepted' };
      });
      if (forwarded.length === 0) {
        if (instead) return answerSend(res, instead);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ results: answered }));
        return;
      }
      forward(req, Buffer.from(JSON.stringify({ envelopes: forwarded })), (answer) => {
        // the sender hears about its own envelopes only, as a relay that kept them would answer
        void body(answer).then(() => {
          if (instead) return answerSend(res, instead);
          res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json' });
          const ok = (answer.statusCode ?? 502) < 300;
          res.end(ok ? JSON.stringify({ results: answered }) : '{}');
        });
      });
      return;
    }
    if (req.method === 'GET' && path === '/api/v1/messages/stream') {
      proxy.streamOpens.push(req.headers['last-event-id'] as string | undefined);
      const up = forward(req, payload, (answer) => {
        // ended (endStreams) before the relay answered: the daemon connects again
        if (res.headersSent) {
          answer.destroy();
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        let buffer = '';
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => {
          buffer += chunk;
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const event = buffer.slice(0, end + 2);
            buffer = buffer.slice(end + 2);
            res.write(event);
            const id = /^id: (\d+)$/m.exec(event)?.[1];
            if (id) streams.set(res, Number(id));
            const data = /^data: (.*)$/m.exec(event)?.[1];
            if (toDuplicate && data && event.includes('event: envelope')) {
              const e = parseEnvelope((JSON.parse(data) as { envelope: unknown }).envelope);
              if (toDuplicate(e)) {
                toDuplicate = undefined;
                res.write(event);
              }
            }
          }
        });
        answer.on('end', () => res.end());
      });
      streams.set(res, Number(req.headers['last-event-id'] ?? 0));
      res.on('close', () => {
        streams.delete(res);
        up.destroy();
      });
      return;
    }
    const ownBlob = req.method === 'GET' ? proxy.blobAnswers.get(path.slice('/api/v1/blobs/'.length)) : undefined;
    if (ownBlob && path.startsWith('/api/v1/blobs/')) {
      ownBlob(res);
      return;
    }
    if (req.method === 'GET' && path.startsWith('/api/v1/blobs/') && proxy.tamperBlobs) {
      forward(req, payload, (answer) => {
        void body(answer).then((bytes) => {
          if (answer.statusCode === 200 && bytes.length > 0) {
            const at = Math.floor(bytes.length / 2);
            bytes[at] = (bytes[at] as number) ^ 1;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(bytes);
        });
      });
      return;
    }
    const up = forward(req, payload, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    res.on('close', () => up.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return proxy;
}

/** startDaemonsOnRelay's stage, its daemons reaching the relay through a fault proxy the test steers. */
export async function startBehindFaultProxy<N extends string>(
  options: Omit<DaemonsOnRelayOptions<N>, 'front'>,
): Promise<{ stage: DaemonsOnRelay<N>; proxy: FaultProxy }> {
  let proxy: FaultProxy | undefined;
  const stage = await startDaemonsOnRelay({
    ...options,
    front: async (relayPort) => {
      proxy = await startFaultProxy(relayPort);
      return proxy;
    },
  });
  return { stage, proxy: proxy as FaultProxy };
}

/** What `read` finds in an agent's archive, opened read-only beside its running daemon (what a hostile relay left noted there). */
export function readArchive<T>(d: TestDaemon, agent: string, read: (db: Database.Database) => T): T {
  return openArchive(d, agent, true, read);
}

/** Changes an agent's archive under its running daemon (what an earlier daemon left there, say). */
export function writeArchive<T>(d: TestDaemon, agent: string, write: (db: Database.Database) => T): T {
  return openArchive(d, agent, false, write);
}

function openArchive<T>(d: TestDaemon, agent: string, readonly: boolean, use: (db: Database.Database) => T): T {
  const db = new Database(join(d.home, 'agents', agent, 'archive.db'), { readonly, fileMustExist: true });
  try {
    return use(db);
  } finally {
    db.close();
  }
}
