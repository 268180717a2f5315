/**
 * A PostgreSQL ledger that refuses the relay, as the operator meets it: at start (serve,
 * dev, and the operator commands that open the ledger), one coded line that names the DSN
 * file, the driver's reason and what to check, never the password; while the relay runs,
 * one log line when the ledger stops answering (with the reason) and one when it answers again.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, tempDir, until } from '@svc/test-harness';
import { call } from '@svc/test-harness/agent-client';
import { inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { PASSWORD_LOGIN_GROUP, postgresUnavailable, type TestPostgres, testPostgres } from '@svc/test-harness/postgres';
import { runRelayCli } from '@svc/test-harness/relay-process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const missing = postgresUnavailable();
const PASSWORD = 'Sekr1t-pw';

describe.skipIf(missing !== undefined)(missing ? `skipped: ${missing}` : 'a PostgreSQL ledger that refuses', () => {
  let server: TestPostgres;
  let adminUrl: string;
  beforeAll(async () => {
    server = await testPostgres();
    adminUrl = (await server.createDatabase()).url;
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function admin(sql: string): Promise<void> {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  }

  /** A login role whose password the server checks (every other role is trusted). */
  async function passwordRole(role: string, password: string): Promise<void> {
    await admin(`DROP ROLE IF EXISTS ${role}`);
    await admin(
      `DO $$ BEGIN CREATE ROLE ${PASSWORD_LOGIN_GROUP} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
    );
    await admin(`CREATE ROLE ${role} LOGIN PASSWORD '${password}' IN ROLE ${PASSWORD_LOGIN_GROUP}`);
  }

  /** A DSN file for `url` with a password in it (trust authentication ignores it, a password role checks it; it must not leak). */
  function dsnFileOf(url: string): string {
    const u = new URL(url);
    u.password = PASSWORD;
    const file = join(tempDir('svc-dsn-'), 'ledger.dsn');
    writeFileSync(file, `${u.href}\n`, { mode: 0o600 });
    return file;
  }

  const onServer = (user: string, database: string) => {
    const u = new URL(adminUrl);
    u.username = user;
    u.pathname = `/${database}`;
    return u.href;
  };

  async function refusals(): Promise<Array<[string, string, RegExp]>> {
    const port = await freePort();
    const nologin = `svc_nologin_${process.pid}`;
    await admin(`DROP ROLE IF EXISTS ${nologin}`);
    await admin(`CREATE ROLE ${nologin} NOLOGIN`);
    // a role whose password the server checks (the others are trusted): the DSN's is wrong
    const checked = `svc_checked_${process.pid}`;
    await passwordRole(checked, 'the-right-one');
    const db = new URL(adminUrl).pathname.slice(1);
    return [
      [
        'a wrong password',
        onServer(checked, db),
        new RegExp(`password authentication failed for user "${checked}"; check the user and password`),
      ],
      [
        'nothing listening on the port',
        `postgres://svc_relay@127.0.0.1:${port}/svc`,
        new RegExp(
          `connection refused at 127\\.0\\.0\\.1:${port}; check that PostgreSQL runs and accepts connections at 127\\.0\\.0\\.1:${port}`,
        ),
      ],
      ['an unknown user', onServer('svc_nobody', db), /role "svc_nobody" does not exist; check the user and password/],
      [
        'a user that may not log in',
        onServer(nologin, db),
        new RegExp(`role "${nologin}" is not permitted to log in; check the user and password`),
      ],
      [
        'an unknown database',
        onServer('svc', 'svc_no_such_db'),
        /database "svc_no_such_db" does not exist; check the database name/,
      ],
      [
        'a host name that does not resolve',
        'postgres://svc_relay@svc-no-such-host.invalid:5432/svc',
        /host svc-no-such-host\.invalid not found \(DNS\)/,
      ],
    ];
  }

  it('svc-relay dev and serve: ledger_unavailable, one line naming the DSN file and the reason, never the password', async () => {
    for (const [what, url, reason] of await refusals()) {
      const dsnFile = dsnFileOf(url);
      for (const command of ['dev', 'serve']) {
        const dataDir = tempDir('svc-relay-pgdown-');
        if (command === 'serve')
          expect((await runRelayCli(['deployment', 'init', '--data-dir', dataDir])).code).toBe(0);
        const r = await runRelayCli([command, '--data-dir', dataDir, '--ledger-dsn-file', dsnFile], {
          SVC_RELAY_LISTEN: `127.0.0.1:${await freePort()}`,
        });
        const last = r.stderr.trimEnd().split('\n').at(-1) as string;
        expect(r.code, `${command}, ${what}: ${r.stderr}`).toBe(1);
        expect(last, `${command}, ${what}`).toMatch(
          new RegExp(
            `^svc-relay: error: the PostgreSQL ledger named by the DSN file ${dsnFile} could not be opened: .*\\(ledger_unavailable\\)$`,
          ),
        );
        expect(last, `${command}, ${what}`).toMatch(reason);
        expect(r.stdout + r.stderr).not.toContain(PASSWORD);
      }
    }
  }, 120_000);

  it('a role whose password the server checks: the right one opens the ledger (scram-sha-256)', async () => {
    const role = `svc_scram_${process.pid}`;
    const db = `svc_scram_${process.pid}`;
    await admin(`DROP DATABASE IF EXISTS ${db}`);
    await passwordRole(role, PASSWORD);
    await admin(`CREATE DATABASE ${db} OWNER ${role}`);
    const relay = await inProcessBusRelay({ SVC_RELAY_LEDGER_DSN_FILE: dsnFileOf(onServer(role, db)) });
    try {
      const alice = await relay.enroll('alice');
      expect((await call(relay.url, 'GET', '/api/v1/agents/me', undefined, alice.auth)).status).toBe(200);
      expect(relay.logLines.join('')).not.toContain(PASSWORD);
    } finally {
      await relay.close();
    }
  }, 60_000);

  it('svc-relay grant and agent revoke: the same line, exit 1', async () => {
    const dataDir = tempDir('svc-relay-pgdown-');
    expect((await runRelayCli(['deployment', 'init', '--data-dir', dataDir])).code).toBe(0);
    const port = await freePort();
    const dsnFile = dsnFileOf(`postgres://svc_relay@127.0.0.1:${port}/svc`);
    for (const args of [
      ['grant', '--agent-id', 'a'],
      ['agent', 'revoke', '--agent-id', 'a'],
    ]) {
      const r = await runRelayCli([...args, '--data-dir', dataDir, '--ledger-dsn-file', dsnFile]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toBe(
        `svc-relay: error: the PostgreSQL ledger named by the DSN file ${dsnFile} could not be opened: connection refused at 127.0.0.1:${port}; check that PostgreSQL runs and accepts connections at 127.0.0.1:${port}, and the host and port in the DSN file (ledger_unavailable)\n`,
      );
    }
  }, 60_000);

  it('a running relay logs an outage once with its reason, and once its end; /readyz gives the reason, as for the bus', async () => {
    // the relay's own login, which the test refuses and allows again (the server stays up)
    const role = `svc_relay_${process.pid}`;
    const db = `svc_outage_${process.pid}`;
    await admin(`DROP DATABASE IF EXISTS ${db}`);
    await admin(`DROP ROLE IF EXISTS ${role}`);
    await admin(`CREATE ROLE ${role} LOGIN`);
    await admin(`CREATE DATABASE ${db} OWNER ${role}`);
    const relay = await inProcessBusRelay({ SVC_RELAY_LEDGER_DSN_FILE: dsnFileOf(onServer(role, db)) });
    const outages = () => relay.logLines.filter((l) => l.includes('the PostgreSQL ledger does not answer'));
    const recoveries = () => relay.logLines.filter((l) => l.includes('the PostgreSQL ledger answers again'));
    try {
      const alice = await relay.enroll('alice');
      await admin(`ALTER ROLE ${role} NOLOGIN`);
      await admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '${role}'`);
      await until(
        async () => {
          const c = new pg.Client({ connectionString: adminUrl });
          await c.connect();
          try {
            return (await c.query('SELECT 1 FROM pg_stat_activity WHERE usename = $1', [role])).rowCount === 0;
          } finally {
            await c.end();
          }
        },
        10_000,
        "the relay's connections ended",
      );
      for (let i = 0; i < 3; i++) {
        const me = await call<{ error: string }>(relay.url, 'GET', '/api/v1/agents/me', undefined, alice.auth);
        expect(me.status).toBe(503);
        expect(me.body).toMatchObject({ error: 'ledger_closed' });
        const ready = await fetch(`${relay.url}/readyz`);
        expect(ready.status).toBe(503);
        const body = (await ready.json()) as { checks: { ledger: { ok: boolean; detail: string } } };
        expect(body.checks.ledger).toEqual({ ok: false, detail: `role "${role}" is not permitted to log in` });
      }
      expect(outages()).toHaveLength(1);
      const outage = JSON.parse(outages()[0] as string) as { level: number; subsystem: string; reason: string };
      expect(outage).toMatchObject({ level: 50, subsystem: 'relay:ledger' });
      expect(outage.reason).toMatch(/not permitted to log in|terminating connection|Connection terminated/);
      expect(recoveries()).toEqual([]);

      await admin(`ALTER ROLE ${role} LOGIN`);
      for (let i = 0; i < 3; i++) expect((await fetch(`${relay.url}/readyz`)).status).toBe(200);
      expect((await call(relay.url, 'GET', '/api/v1/agents/me', undefined, alice.auth)).status).toBe(200);
      expect(outages()).toHaveLength(1);
      expect(recoveries()).toHaveLength(1);
      expect(JSON.parse(recoveries()[0] as string)).toMatchObject({ level: 40, subsystem: 'relay:ledger' });
      expect(relay.logLines.join('')).not.toContain(PASSWORD);
    } finally {
      await relay.close();
    }
  }, 60_000);
});
