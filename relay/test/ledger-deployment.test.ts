/**
 * A ledger belongs to one deployment: the first relay or operator command that opens it
 * ties it to the deployment of its data dir, and another deployment's is refused, on
 * SQLite (a copied ledger file) as on PostgreSQL (two deployments given one DSN file, where
 * the second's operator could revoke the first one's agents).
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { postgresUnavailable, type TestPostgres, testPostgres } from '@svc/test-harness/postgres';
import { runRelayCli } from '@svc/test-harness/relay-process';
import { afterAll, describe, expect, it } from 'vitest';

const pgMissing = postgresUnavailable();
let pg: TestPostgres | undefined;
afterAll(async () => {
  await pg?.stop();
});

async function deployment(): Promise<{ dataDir: string; id: string }> {
  const dataDir = tempDir('svc-relay-ledger-owner-');
  const r = await runRelayCli(['deployment', 'init', '--data-dir', dataDir, '--json'], {}, { bare: true });
  expect(r.code, r.stderr).toBe(0);
  return { dataDir, id: (JSON.parse(r.stdout) as { deployment_id: string }).deployment_id };
}

const refusal = (where: string, owner: string, other: string) =>
  `svc-relay: error: the ledger ${where} belongs to deployment ${owner}, not to this data dir's ${other}: each deployment needs a ledger of its own (config_invalid)\n`;

describe('a ledger is one deployment’s', () => {
  it('SQLite: a ledger file copied into another deployment’s data dir is refused there', async () => {
    const a = await deployment();
    const b = await deployment();
    expect(
      (await runRelayCli(['grant', '--data-dir', a.dataDir, '--agent-id', 'alice'], {}, { bare: true })).code,
    ).toBe(0);
    copyFileSync(join(a.dataDir, 'ledger.db'), join(b.dataDir, 'ledger.db'));
    const r = await runRelayCli(
      ['agent', 'revoke', '--data-dir', b.dataDir, '--agent-id', 'alice'],
      {},
      { bare: true },
    );
    expect(r.stderr).toBe(refusal(join(b.dataDir, 'ledger.db'), a.id, b.id));
    expect(r.code).toBe(2);
    // the owner goes on using it
    expect((await runRelayCli(['grant', '--data-dir', a.dataDir, '--agent-id', 'bob'], {}, { bare: true })).code).toBe(
      0,
    );
  }, 60_000);

  it.skipIf(pgMissing)(
    'PostgreSQL: a second deployment on the same DSN file is refused',
    async () => {
      pg = await testPostgres();
      const db = await pg.createDatabase();
      const a = await deployment();
      const b = await deployment();
      const dsn = ['--ledger-dsn-file', db.dsnFile];
      expect(
        (await runRelayCli(['grant', '--data-dir', a.dataDir, '--agent-id', 'alice', ...dsn], {}, { bare: true })).code,
      ).toBe(0);
      for (const args of [
        ['agent', 'revoke', '--agent-id', 'alice'],
        ['grant', '--agent-id', 'mallory'],
      ]) {
        const r = await runRelayCli([...args, '--data-dir', b.dataDir, ...dsn], {}, { bare: true });
        expect(r.stderr, args.join(' ')).toBe(refusal(`named in ${db.dsnFile}`, a.id, b.id));
        expect(r.code).toBe(2);
      }
    },
    60_000,
  );
});
