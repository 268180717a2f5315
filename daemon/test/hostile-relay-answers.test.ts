/**
 * What a hostile relay (or a man in the middle of a plain-http relay, for a while) can leave
 * behind in a daemon through the bookkeeping of its answers: cursors and receipts the daemon
 * keeps, and error answers it reads and logs. Once the relay answers honestly again, the
 * daemon must work as before: nothing it kept of a hostile answer may keep it from
 * connecting or reading receipts, and nothing of such an answer may fill its disk.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { newMessageId } from '@svc/shared';
import { until } from '@svc/test-harness';
import type { TestDaemon } from '@svc/test-harness/daemon';
import type { DaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonEvent } from '../src/client/index.js';
import { type FaultProxy, readArchive, startBehindFaultProxy } from './fault-proxy.js';

let proxy: FaultProxy;
let stage: DaemonsOnRelay<'alice' | 'bob'>;
let a: TestDaemon;
let b: TestDaemon;
let bobEvents: DaemonEvent[];

beforeAll(async () => {
  ({ stage, proxy } = await startBehindFaultProxy({ agents: ['alice', 'bob'] }));
  ({ alice: a, bob: b } = stage.daemons);
  bobEvents = stage.events.bob;
}, 90_000);

afterAll(() => stage?.close());

const connected = (e: DaemonEvent) => e.type === 'session' && e.agent === 'bob' && e.state === 'connected';

describe('a stream cursor the relay makes up', () => {
  it('is never kept when no relay could take it back: the stream opens again and delivers', async () => {
    for (const cursor of ['not-a-cursor', -1, 1.5, 1e16, '7\r\nx-evil: 1']) {
      const seen = bobEvents.length;
      proxy.inject({ message_id: newMessageId(), sender: 'nobody', envelope: { not: 'an envelope' }, cursor });
      await until(
        () => bobEvents.slice(seen).some((e) => e.type === 'rejected'),
        15_000,
        `the junk event (cursor ${JSON.stringify(cursor)})`,
      );
      const opens = proxy.streamOpens.length;
      const ended = bobEvents.length;
      proxy.endStreams();
      // the stream of bob (and alice's) opens again, with a Last-Event-ID the relay takes
      await until(
        () => bobEvents.slice(ended).some(connected),
        15_000,
        `bob connected again after cursor ${JSON.stringify(cursor)}`,
      );
      expect(proxy.streamOpens.length).toBeGreaterThan(opens);
      for (const id of proxy.streamOpens.slice(opens)) expect(id ?? '0').toMatch(/^[0-9]{1,15}$/);
    }
    // and a message comes over the stream, no sync asked
    const seen = bobEvents.length;
    const sent = await a.client.send('alice', { to: 'bob', content: 'still streaming' });
    await until(
      () => bobEvents.slice(seen).some((e) => e.type === 'message' && e.message.message_id === sent.message_id),
      15_000,
      'the message over the stream',
    );
    // and bob is done with it (acked on the relay, so his cursor has moved): the next test
    // writes that cursor itself
    await until(
      async () => {
        await a.client.sync('alice');
        return stage.events.alice.some((e) => e.type === 'receipt' && e.message_id === sent.message_id);
      },
      15_000,
      'the receipt of the message over the stream',
      250,
    );
  });

  it('a bad cursor an archive already holds is read as none', async () => {
    // what a daemon before this check kept: the session then opens its stream from the start
    const db = new Database(join(b.home, 'agents', 'bob', 'archive.db'));
    try {
      db.prepare("UPDATE sync_cursors SET value = 'not-a-cursor' WHERE name = 'stream'").run();
    } finally {
      db.close();
    }
    const ended = bobEvents.length;
    const opens = proxy.streamOpens.length;
    proxy.endStreams();
    await until(() => bobEvents.slice(ended).some(connected), 15_000, 'bob connected again');
    expect(proxy.streamOpens.slice(opens)).toContain('0');
  });

  it('one far ahead of the relay is set back at the next connect that finds a message behind it: delivery recovers, no sync asked', async () => {
    const ahead = '999999999999999';
    const seen = bobEvents.length;
    proxy.inject({ message_id: newMessageId(), sender: 'nobody', envelope: { not: 'an envelope' }, cursor: +ahead });
    await until(() => bobEvents.slice(seen).some((e) => e.type === 'rejected'), 15_000, 'the made-up event');
    // the honest relay from here on: bob's stream opens again behind the made-up cursor
    let ended = bobEvents.length;
    let opens = proxy.streamOpens.length;
    proxy.endStreams();
    await until(() => bobEvents.slice(ended).some(connected), 15_000, 'bob connected behind the made-up cursor');
    expect(proxy.streamOpens.slice(opens)).toContain(ahead);

    // a message the stream opened after that cursor does not bring; the next connect (the
    // relay ends each stream when its token expires: here at once) finds it waiting
    const before = bobEvents.length;
    const sent = await a.client.send('alice', { to: 'bob', content: 'behind a made-up cursor' });
    ended = bobEvents.length;
    const aliceEnded = stage.events.alice.length;
    opens = proxy.streamOpens.length;
    proxy.endStreams();
    const got = (id: string) =>
      bobEvents.slice(before).filter((e) => e.type === 'message' && e.message.message_id === id);
    await until(() => got(sent.message_id).length > 0, 15_000, 'the message, no sync asked');
    await until(() => bobEvents.slice(ended).some(connected), 15_000, 'bob connected again');
    // (alice's stream was ended too: counted once it is open again)
    await until(
      () => stage.events.alice.slice(aliceEnded).some((e) => e.type === 'session' && e.state === 'connected'),
      15_000,
      'alice connected again',
    );
    // the stream reads from the start again, and carries the next message without a reconnect
    expect(proxy.streamOpens.slice(opens)).toContain('0');
    const opened = proxy.streamOpens.length;
    const next = await a.client.send('alice', { to: 'bob', content: 'on the stream again' });
    await until(() => got(next.message_id).length > 0, 15_000, 'the next message over the stream');
    expect(proxy.streamOpens.length).toBe(opened);
    // each once: announced once, archived once
    expect(got(sent.message_id)).toHaveLength(1);
    expect(got(next.message_id)).toHaveLength(1);
    const thread = await b.client.read('bob', 'alice');
    expect(thread.filter((m) => m.message_id === sent.message_id)).toHaveLength(1);
    expect(thread.filter((m) => m.message_id === next.message_id)).toHaveLength(1);
    // and the daemon said why, once
    const log = readFileSync(join(b.home, 'logs', 'daemon.log'), 'utf8');
    expect(log.split('\n').filter((l) => l.includes('stream cursor ahead of the relay'))).toHaveLength(1);
  });
});

describe('receipts the relay makes up', () => {
  it('a next cursor no relay could take back is not kept: later receipts still come', async () => {
    for (const next of [1e16, 1.5, '99999999999999999']) {
      proxy.receipts = () => ({
        receipts: [{ id: 1, message_id: newMessageId(), recipient: 'bob', acked_at: new Date().toISOString() }],
        next,
      });
      try {
        await a.client.sync('alice');
      } finally {
        proxy.receipts = undefined;
      }
      // the honest relay again: its receipts are read from the cursor the daemon kept
      const sent = await a.client.send('alice', { to: 'bob', content: `receipt after next=${next}` });
      await until(
        () => bobEvents.some((e) => e.type === 'message' && e.message.message_id === sent.message_id),
        15_000,
        'bob has it',
      );
      await until(
        async () => {
          await a.client.sync('alice');
          return readArchive(
            a,
            'alice',
            (db) => db.prepare('SELECT 1 FROM receipts WHERE message_id = ?').get(sent.message_id) !== undefined,
          );
        },
        15_000,
        `the receipt after next=${next}`,
        250,
      );
    }
  });

  it('a receipt that names no message id, agent or time is not kept (its fields would fill the disk)', async () => {
    const big = 'x'.repeat(200_000);
    const now = new Date().toISOString();
    proxy.receipts = (since) => ({
      receipts: [
        { id: since + 1, message_id: big, recipient: 'bob', acked_at: now },
        { id: since + 2, message_id: newMessageId(), recipient: big, acked_at: now },
        { id: since + 3, message_id: newMessageId(), recipient: 'bob', acked_at: big },
      ],
      next: since + 3,
    });
    try {
      await a.client.sync('alice');
    } finally {
      proxy.receipts = undefined;
    }
    const row = readArchive(
      a,
      'alice',
      (db) =>
        db
          .prepare(
            'SELECT max(length(message_id)) AS id, max(length(recipient)) AS r, max(length(at)) AS at FROM receipts',
          )
          .get() as { id: number; r: number; at: number },
    );
    expect(row.id).toBeLessThanOrEqual(64);
    expect(row.r).toBeLessThanOrEqual(128);
    expect(row.at).toBeLessThanOrEqual(64);
  });
});

describe('an error answer of any size', () => {
  it('is read no further than an error answer, and what reaches the log and the client is cut short', async () => {
    const log = join(b.home, 'logs', 'daemon.log');
    const huge = 'y'.repeat(20 * 1024 * 1024);
    proxy.answers.set('GET /api/v1/agents/me/muted', (res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'internal_error', message: huge }));
    });
    const before = statSync(log).size;
    try {
      const refused = await b.client.muted('bob').then(
        () => undefined,
        (err: Error) => err,
      );
      expect(refused).toBeInstanceOf(Error);
      expect((refused as Error).message.length).toBeLessThan(70_000);
      // each reconnect reads the mute list again (and logs why it could not)
      for (let i = 0; i < 3; i++) {
        const ended = bobEvents.length;
        proxy.endStreams();
        await until(() => bobEvents.slice(ended).some(connected), 15_000, 'bob connected again');
      }
    } finally {
      proxy.answers.delete('GET /api/v1/agents/me/muted');
    }
    expect(statSync(log).size - before).toBeLessThan(1024 * 1024);
  });
});

describe('credentials the relay makes up', () => {
  it('an API key no request could carry is never stored: once the relay answers honestly, the agent signs in again', async () => {
    const junk = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    // the relay ends bob's token and refuses his API key, then answers his sign-in with a key
    // that is no header value
    proxy.answers.set('GET /api/v1/agents/me/muted', (res) =>
      junk(res, 401, { error: 'invalid_token', message: 'made up' }),
    );
    proxy.answers.set('POST /api/v1/auth/token', (res) =>
      junk(res, 401, { error: 'invalid_api_key', message: 'made up' }),
    );
    proxy.answers.set('POST /api/v1/auth/sign-in', (res) =>
      junk(res, 200, {
        api_key: 'svc_ak_made\r\nup',
        access_token: 'made-up',
        access_token_expires_at: new Date(Date.now() - 1000).toISOString(),
      }),
    );
    try {
      await b.client.muted('bob').catch(() => undefined);
    } finally {
      proxy.answers.delete('GET /api/v1/agents/me/muted');
      proxy.answers.delete('POST /api/v1/auth/token');
      proxy.answers.delete('POST /api/v1/auth/sign-in');
    }
    // the honest relay again: bob gets a token (signing in again if need be)
    const token = await b.client.token('bob');
    expect(token.access_token.split('.')).toHaveLength(3);
  });
});
