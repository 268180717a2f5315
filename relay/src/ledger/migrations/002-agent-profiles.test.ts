import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';
import { migration002 } from './002-agent-profiles.js';

const SECRET = 'ab'.repeat(32);

describe('migration 002-agent-profiles', () => {
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    const profile = (row: string, url: string | null, secret: string | null, at: number | null = secret ? 1 : null) =>
      db.run(
        'INSERT INTO agent_profiles (agent_row, endpoint_url, webhook_secret, webhook_secret_created_at, updated_at) VALUES (?, ?, ?, ?, 0)',
        [row, url, secret, at],
      );

    it('records itself after 001 and is not applied twice', async () => {
      db = await fresh();
      await migrate(db, [migration001, migration002]);
      await insertGrant(db);
      await insertAgent(db, 'r1');
      await insertAgent(db, 'r2', { agentId: 'b' });
      expect(await db.all('SELECT version, name FROM schema_migrations ORDER BY version')).toEqual([
        { version: 1, name: 'initial' },
        { version: 2, name: 'agent-profiles' },
      ]);
      expect(await migrate(db, [migration001, migration002])).toEqual([]);
    });

    it('upgrades a ledger that already holds 001 data', async () => {
      const old = await fresh();
      await migrate(old, [migration001]);
      await insertGrant(old);
      expect(await migrate(old, [migration001, migration002])).toEqual([2]);
      expect(await old.get('SELECT count(*) AS n FROM agent_profiles')).toEqual({ n: 0 });
    });

    it('keeps the endpoint and the webhook secret together, the secret 64 lower-case hex', async () => {
      await expect(profile('r1', 'https://x.example/', null)).rejects.toThrow(REFUSED.check);
      await expect(profile('r1', null, SECRET)).rejects.toThrow(REFUSED.check);
      await expect(profile('r1', 'https://x.example/', 'AB'.repeat(32))).rejects.toThrow(REFUSED.check);
      await expect(profile('r1', 'https://x.example/', 'ab'.repeat(31))).rejects.toThrow(REFUSED.check);
      await expect(profile('r1', 'https://x.example/', SECRET, null)).rejects.toThrow(REFUSED.check);
      await profile('r1', 'https://x.example/', SECRET);
      const row = await db.get('SELECT visibility, last_seen_at FROM agent_profiles WHERE agent_row = ?', ['r1']);
      expect(row).toEqual({ visibility: 'org', last_seen_at: null });
      await expect(profile('no-such-row', null, null)).rejects.toThrow(REFUSED.foreignKey);
      await expect(db.run("UPDATE agent_profiles SET visibility = 'everyone' WHERE agent_row = 'r1'")).rejects.toThrow(
        REFUSED.check,
      );
    });

    it('forgets the endpoint and secret when the incarnation is revoked', async () => {
      await db.run('UPDATE agents SET revoked_at = 5 WHERE id = ?', ['r1']);
      expect(
        await db.get('SELECT endpoint_url, webhook_secret, webhook_secret_created_at FROM agent_profiles'),
      ).toEqual({ endpoint_url: null, webhook_secret: null, webhook_secret_created_at: null });
    });

    it('keys blocks, mutes and contacts by tenant and agent ids, one row per pair, never oneself', async () => {
      for (const table of ['agent_blocks', 'agent_mutes']) {
        const ins = (tenant: string, a: string, b: string) =>
          db.run(
            `INSERT INTO ${table} (tenant_id, agent_id, target_agent_id, target_agent_number, created_at) VALUES (?, ?, ?, ?, 0)`,
            [tenant, a, b, b],
          );
        await ins('t', 'a', 'b');
        await ins('u', 'a', 'b');
        await expect(ins('t', 'a', 'b')).rejects.toThrow(REFUSED.unique);
        await expect(ins('t', 'a', 'a')).rejects.toThrow(REFUSED.check);
      }
      const contact = () =>
        db.run(
          "INSERT INTO contacts (tenant_id, agent_id, contact_agent_id, contact_agent_number, created_at, updated_at) VALUES ('t', 'a', 'b', 'b', 0, 0)",
        );
      await contact();
      await expect(contact()).rejects.toThrow(REFUSED.unique);
    });

    it('stores reports with a reason of 10 to 2000 characters and real incarnations', async () => {
      const report = (id: string, reason: string, targetRow = 'r2') =>
        db.run(
          "INSERT INTO agent_reports (id, tenant_id, reporter_agent_id, reporter_row, target_agent_id, target_row, reason, created_at) VALUES (?, 't', 'a', 'r1', 'b', ?, ?, 0)",
          [id, targetRow, reason],
        );
      await report('p1', 'x'.repeat(10));
      await report('p2', 'é'.repeat(2000));
      await expect(report('p3', 'x'.repeat(9))).rejects.toThrow(REFUSED.check);
      await expect(report('p4', 'x'.repeat(2001))).rejects.toThrow(REFUSED.check);
      await expect(report('p5', 'x'.repeat(10), 'nope')).rejects.toThrow(REFUSED.foreignKey);
      await expect(
        db.run(
          "INSERT INTO agent_reports (id, tenant_id, reporter_agent_id, reporter_row, target_agent_id, target_row, reason, created_at) VALUES ('p6', 't', 'a', 'r1', 'b', 'r2', 'long enough reason', 'now')",
        ),
      ).rejects.toThrow(REFUSED.type);
    });
  });
});
