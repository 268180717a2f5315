/**
 * The relay's main HTTP paths with its ledger on PostgreSQL (SVC_RELAY_LEDGER_DSN_FILE):
 * enrollment (a grant redeemed once), challenge sign-in, send / pending / ack / receipts,
 * the message id conflict, a webhook endpoint, and revocation. One PostgreSQL server for
 * this file, started by the test harness; a real managed nats-server.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, get as httpGet, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { newMessageId } from '@svc/shared';
import { freePort, runChild, tempDir, until } from '@svc/test-harness';
import {
  call,
  enrollAgent,
  enrollmentBody,
  newIdentity,
  sealFor,
  type TestAgent,
} from '@svc/test-harness/agent-client';
import { RELAY_BIN } from '@svc/test-harness/bins';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { type PostgresServer, postgresUnavailable, startPostgres } from '@svc/test-harness/postgres';
import { bareEnv, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintGrant } from '../src/services/grants.js';

const missing = postgresUnavailable();
let server: PostgresServer;
let relay: BusRelay;
let url: string;
let alice: TestAgent;
let bob: TestAgent;
let carol: TestAgent;

describe.skipIf(missing !== undefined)(missing ? `skipped: ${missing}` : 'the relay on a PostgreSQL ledger', () => {
  beforeAll(async () => {
    server = await startPostgres();
    const db = await server.createDatabase();
    url = db.url;
    relay = await inProcessBusRelay({ SVC_RELAY_LEDGER_DSN_FILE: db.dsnFile });
    [alice, bob, carol] = await Promise.all([relay.enroll('alice'), relay.enroll('bob'), relay.enroll('carol')]);
  }, 90_000);

  afterAll(async () => {
    await relay?.close();
    await server?.stop();
  });

  const send = (from: TestAgent, envelopes: unknown[]) =>
    call<{ results?: Array<{ status: string }>; error?: string }>(
      relay.url,
      'POST',
      '/api/v1/messages',
      { envelopes },
      from.auth,
    );

  it('keeps its rows in PostgreSQL, not in a SQLite file', async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query('SELECT agent_id FROM agents WHERE revoked_at IS NULL ORDER BY agent_id');
      expect(rows.map((r: { agent_id: string }) => r.agent_id)).toEqual(['alice', 'bob', 'carol']);
    } finally {
      await c.end();
    }
  });

  it('redeems a grant once: two enrollments with one code at once, one 201 and one 403', async () => {
    const grant = await mintGrant(relay.relay.context, {
      tenantId: 'default',
      agentId: 'dave',
      capabilities: ['http-relay'],
      createdBy: 'test',
    });
    const answers = await Promise.all(
      [newIdentity(), newIdentity()].map((id) =>
        call(relay.url, 'POST', '/api/v1/enrollment', enrollmentBody(grant.enrollment_code, id)),
      ),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([201, 403]);
  });

  it('sends, lists pending, acknowledges, and returns the receipt', async () => {
    const envelope = sealFor(alice, bob, 'hello over postgres');
    expect((await send(alice, [envelope])).status).toBe(202);
    expect((await send(alice, [envelope])).body.results?.[0]?.status).toBe('duplicate');
    const pending = await call<{ envelopes: Array<{ message_id: string; sender: string }> }>(
      relay.url,
      'GET',
      '/api/v1/messages/pending?limit=10',
      undefined,
      bob.auth,
    );
    expect(pending.body.envelopes.map((e) => [e.message_id, e.sender])).toEqual([
      [envelope.header.message_id, alice.number],
    ]);
    const ack = await call(
      relay.url,
      'POST',
      `/api/v1/messages/${envelope.header.message_id}/ack`,
      undefined,
      bob.auth,
    );
    expect(ack.status).toBe(200);
    const receipts = await call<{ receipts: Array<{ message_id: string; recipient: string }> }>(
      relay.url,
      'GET',
      '/api/v1/receipts',
      undefined,
      alice.auth,
    );
    expect(receipts.body.receipts).toEqual([
      expect.objectContaining({ message_id: envelope.header.message_id, recipient: bob.number }),
    ]);
  });

  it('accepts a message id once: two senders at once, one 202 and one 409', async () => {
    const id = newMessageId();
    const [a, c] = await Promise.all([
      send(alice, [sealFor(alice, bob, 'a', { message_id: id })]),
      send(carol, [sealFor(carol, bob, 'c', { message_id: id })]),
    ]);
    expect([a.status, c.status].sort()).toEqual([202, 409]);
  });

  it('sets a webhook endpoint (a secret shown once) and forgets it at revocation', async () => {
    const set = await call<{ webhook_secret?: string; webhook_secret_set: boolean }>(
      relay.url,
      'PATCH',
      '/api/v1/agents/me',
      { endpoint_url: 'https://hooks.example.com/svc' },
      carol.auth,
    );
    expect(set.status).toBe(200);
    expect(set.body.webhook_secret).toMatch(/^[0-9a-f]{64}$/);
    const revoked = await call(relay.url, 'POST', '/api/v1/agents/me/revoke', undefined, carol.auth);
    expect(revoked.status).toBe(200);
    // revoked: its token stops working at once
    expect((await call(relay.url, 'GET', '/api/v1/agents/me', undefined, carol.auth)).status).toBe(401);
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query(
        "SELECT p.webhook_secret FROM agent_profiles p JOIN agents a ON a.id = p.agent_row WHERE a.agent_id = 'carol'",
      );
      expect(rows).toEqual([{ webhook_secret: null }]);
    } finally {
      await c.end();
    }
  });

  it('svc-relay dev on --ledger-dsn-file: the grant its printed hint mints and the enrollment go through PostgreSQL; the DSN is never logged', async () => {
    const db = await server.createDatabase();
    // trust authentication ignores the password: it stands for a real one that must not leak
    const dsnFile = join(tempDir('svc-dsn-'), 'ledger.dsn');
    writeFileSync(dsnFile, db.url.replace('//svc@', '//svc:Sekr1t-pw@'), { mode: 0o600 });
    const proc = await spawnRelay({ command: 'dev', args: ['--ledger-dsn-file', dsnFile] });
    try {
      // the hint runs as printed, from elsewhere, with no relay setting in its environment
      const hint = /Mint more with: (.+?) {3}·/.exec(proc.stdout())?.[1] as string;
      const g = await runChild('sh', ['-c', `${hint.replace('<id>', 'pat')} --json`], {
        cwd: tempDir('svc-elsewhere-'),
        env: bareEnv(),
      });
      expect(g.code, `${hint}: ${g.stderr}`).toBe(0);
      const pat = await enrollAgent(proc.url, (JSON.parse(g.stdout) as { enrollment_code: string }).enrollment_code);
      expect(pat.agentId).toBe('pat');
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      try {
        const { rows } = await c.query('SELECT agent_id FROM agents');
        expect(rows).toEqual([{ agent_id: 'pat' }]);
      } finally {
        await c.end();
      }
      // grant and agent revoke told the data dir alone find the ledger the relay runs on
      // (on the data dir's SQLite file, the code would never enroll and the revocation
      // would change nothing)
      const operator = (args: string[]) =>
        runChild(process.execPath, [RELAY_BIN, ...args, '--data-dir', proc.dataDir], {
          cwd: tempDir('svc-elsewhere-'),
          env: bareEnv(),
        });
      const q = await operator(['grant', '--agent-id', 'quin', '--json']);
      expect(q.code, q.stderr).toBe(0);
      const quin = await enrollAgent(proc.url, (JSON.parse(q.stdout) as { enrollment_code: string }).enrollment_code);
      const revoked = await operator(['agent', 'revoke', '--agent-id', 'pat']);
      expect(revoked.code, revoked.stderr).toBe(0);
      const c2 = new pg.Client({ connectionString: db.url });
      await c2.connect();
      try {
        const { rows } = await c2.query(
          'SELECT agent_id, revoked_at IS NOT NULL AS revoked FROM agents ORDER BY agent_id',
        );
        expect(rows).toEqual([
          { agent_id: 'pat', revoked: true },
          { agent_id: 'quin', revoked: false },
        ]);
      } finally {
        await c2.end();
      }
      expect((await call(proc.url, 'GET', '/api/v1/agents/me', undefined, pat.auth)).status).toBe(401);
      expect((await call(proc.url, 'GET', '/api/v1/agents/me', undefined, quin.auth)).status).toBe(200);
      expect(existsSync(join(proc.dataDir, 'ledger.db'))).toBe(false);
    } finally {
      await proc.stop();
    }
    expect(proc.stdout()).not.toContain('Sekr1t');
    expect(readFileSync(proc.logFile, 'utf8')).not.toContain('Sekr1t');
  }, 60_000);

  it('refuses to start on a DSN file without a postgres:// URL, and does not echo its content', async () => {
    const bad = join(tempDir('svc-dsn-'), 'ledger.dsn');
    writeFileSync(bad, 'host=db password=Sekr1t-pw\n', { mode: 0o600 });
    const res = await runRelayCli(['dev', '--ledger-dsn-file', bad], {
      SVC_RELAY_DATA_DIR: tempDir('svc-relay-'),
      SVC_RELAY_LISTEN: `127.0.0.1:${await freePort()}`,
    });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('must hold one postgres:// URL');
    expect(res.stdout + res.stderr).not.toContain('Sekr1t');
  }, 60_000);

  it('close() ends an open event stream and a long-poll with their keep-alive connections, at once', async () => {
    const db = await server.createDatabase();
    const other = await inProcessBusRelay({ SVC_RELAY_LEDGER_DSN_FILE: db.dsnFile });
    const dan = await other.enroll('dan');
    // node's agent keeps a free connection until the server closes it (no idle timeout)
    const agent = new Agent({ keepAlive: true });
    const get = (path: string) =>
      new Promise<IncomingMessage>((resolve, reject) =>
        httpGet(`${other.url}${path}`, { agent, headers: dan.auth }, resolve).on('error', reject),
      );
    try {
      const stream = await get('/api/v1/messages/stream');
      await new Promise((resolve) => stream.once('data', resolve)); // open
      const poll = get('/api/v1/messages/pending?wait=30');
      await until(() => other.logLines.some((l) => l.includes('/api/v1/messages/pending?wait=30')), 5_000, 'the poll');
      // The server waits for every connection; without ending them it would wait for the
      // keep-alive timeout (72 s), longer than this test may take.
      await other.close();
      expect((await poll).statusCode).toBe(200);
    } finally {
      agent.destroy();
      await other.close();
    }
  });

  // last: it stops the PostgreSQL server
  it('answers 503 ledger_closed when PostgreSQL goes away, and /readyz reports it', async () => {
    await server.stop();
    const me = await call<{ error: string }>(relay.url, 'GET', '/api/v1/agents/me', undefined, alice.auth);
    expect(me.status).toBe(503);
    expect(me.body).toMatchObject({ error: 'ledger_closed' });
    const ready = await fetch(`${relay.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: { ledger: { ok: boolean } } }).checks.ledger.ok).toBe(false);
  });
});
