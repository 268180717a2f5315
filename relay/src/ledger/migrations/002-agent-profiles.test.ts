import { describe, expect, it } from 'vitest';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate, openDatabase } from '../database.js';
import { SqliteDatabase } from '../sqlite.js';
import { migration001 } from './001-initial.js';
import { migration002 } from './002-agent-profiles.js';

const SECRET = 'ab'.repeat(32);

describe('migration 002-agent-profiles', async () => {
  const db = openDatabase(':memory:');
  await migrate(new SqliteDatabase(db), [migration001, migration002]);
  insertGrant(db);
  const agent = (id: string, agentId = 'a') => insertAgent(db, id, { agentId });
  const profile = (row: string, url: string | null, secret: string | null, at: number | null = secret ? 1 : null) =>
    db
      .prepare(
        'INSERT INTO agent_profiles (agent_row, endpoint_url, webhook_secret, webhook_secret_created_at, updated_at) VALUES (?, ?, ?, ?, 0)',
      )
      .run(row, url, secret, at);
  agent('r1');
  agent('r2', 'b');

  it('records itself after 001 and is not applied twice', async () => {
    expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1, name: 'initial' },
      { version: 2, name: 'agent-profiles' },
    ]);
    expect(await migrate(new SqliteDatabase(db), [migration001, migration002])).toEqual([]);
  });

  it('upgrades a ledger that already holds 001 data', async () => {
    const old = openDatabase(':memory:');
    await migrate(new SqliteDatabase(old), [migration001]);
    insertGrant(old);
    expect(await migrate(new SqliteDatabase(old), [migration001, migration002])).toEqual([2]);
    expect(old.prepare('SELECT count(*) AS n FROM agent_profiles').get()).toEqual({ n: 0 });
  });

  it('keeps the endpoint and the webhook secret together, the secret 64 lower-case hex', async () => {
    expect(() => profile('r1', 'https://x.example/', null)).toThrow(/CHECK/);
    expect(() => profile('r1', null, SECRET)).toThrow(/CHECK/);
    expect(() => profile('r1', 'https://x.example/', 'AB'.repeat(32))).toThrow(/CHECK/);
    expect(() => profile('r1', 'https://x.example/', 'ab'.repeat(31))).toThrow(/CHECK/);
    expect(() => profile('r1', 'https://x.example/', SECRET, null)).toThrow(/CHECK/);
    profile('r1', 'https://x.example/', SECRET);
    const row = db.prepare('SELECT visibility, last_seen_at FROM agent_profiles WHERE agent_row = ?').get('r1');
    expect(row).toEqual({ visibility: 'org', last_seen_at: null });
    expect(() => profile('no-such-row', null, null)).toThrow(/FOREIGN KEY/);
    expect(() => db.prepare("UPDATE agent_profiles SET visibility = 'everyone' WHERE agent_row = 'r1'").run()).toThrow(
      /CHECK/,
    );
  });

  it('forgets the endpoint and secret when the incarnation is revoked', async () => {
    db.prepare('UPDATE agents SET revoked_at = 5 WHERE id = ?').run('r1');
    expect(
      db.prepare('SELECT endpoint_url, webhook_secret, webhook_secret_created_at FROM agent_profiles').get(),
    ).toEqual({ endpoint_url: null, webhook_secret: null, webhook_secret_created_at: null });
  });

  it('keys blocks, mutes and contacts by tenant and agent ids, one row per pair, never oneself', async () => {
    for (const table of ['agent_blocks', 'agent_mutes']) {
      const ins = db.prepare(
        `INSERT INTO ${table} (tenant_id, agent_id, target_agent_id, target_agent_number, created_at) VALUES (?, ?, ?, ?, 0)`,
      );
      ins.run('t', 'a', 'b', 'b');
      ins.run('u', 'a', 'b', 'b');
      expect(() => ins.run('t', 'a', 'b', 'b')).toThrow(/UNIQUE|PRIMARY KEY/);
      expect(() => ins.run('t', 'a', 'a', 'a')).toThrow(/CHECK/);
    }
    const contact = db.prepare(
      "INSERT INTO contacts (tenant_id, agent_id, contact_agent_id, contact_agent_number, created_at, updated_at) VALUES ('t', 'a', 'b', 'b', 0, 0)",
    );
    contact.run();
    expect(() => contact.run()).toThrow(/UNIQUE|PRIMARY KEY/);
  });

  it('stores reports with a reason of 10 to 2000 characters and real incarnations', async () => {
    const report = (id: string, reason: string, targetRow = 'r2') =>
      db
        .prepare(
          "INSERT INTO agent_reports (id, tenant_id, reporter_agent_id, reporter_row, target_agent_id, target_row, reason, created_at) VALUES (?, 't', 'a', 'r1', 'b', ?, ?, 0)",
        )
        .run(id, targetRow, reason);
    report('p1', 'x'.repeat(10));
    report('p2', 'é'.repeat(2000));
    expect(() => report('p3', 'x'.repeat(9))).toThrow(/CHECK/);
    expect(() => report('p4', 'x'.repeat(2001))).toThrow(/CHECK/);
    expect(() => report('p5', 'x'.repeat(10), 'nope')).toThrow(/FOREIGN KEY/);
    expect(() =>
      db
        .prepare(
          "INSERT INTO agent_reports (id, tenant_id, reporter_agent_id, reporter_row, target_agent_id, target_row, reason, created_at) VALUES ('p6', 't', 'a', 'r1', 'b', 'r2', 'long enough reason', 'now')",
        )
        .run(),
    ).toThrow(/cannot store TEXT value in INTEGER column/);
  });
});
