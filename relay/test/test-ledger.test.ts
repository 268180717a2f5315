/**
 * The test harness builds every relay on the run's ledger: SQLite by default, PostgreSQL
 * with SVC_TEST_LEDGER=postgres (npm run test:relay:postgres), one database per data dir,
 * which the svc-relay commands run on that data dir find too.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { inProcessRelay } from '@svc/test-harness/in-process';
import { runRelayCli } from '@svc/test-harness/relay-process';
import { ledgerEnv, testLedger } from '@svc/test-harness/test-ledger';
import { afterAll, expect, it } from 'vitest';
import { ledgerReader } from './helpers/ledger-reader.js';

const dataDir = tempDir('svc-relay-ledger-');
const reader = ledgerReader(() => dataDir);
afterAll(() => reader.close());

it('an in-process relay keeps its ledger where the run says', async () => {
  const relay = await inProcessRelay();
  try {
    expect(relay.ctx.ledger.sql.dialect).toBe(testLedger());
  } finally {
    await relay.close();
  }
});

it('svc-relay commands on a data dir share its ledger: a grant minted by one is in the ledger the data dir maps to', async () => {
  expect((await runRelayCli(['deployment', 'init'], { SVC_RELAY_DATA_DIR: dataDir })).code).toBe(0);
  const ok = await runRelayCli(['grant', '--agent-id', 'gina', '--json', '--data-dir', dataDir]);
  expect(ok.code, ok.stderr).toBe(0);
  expect(await reader.get('SELECT agent_id FROM grants')).toEqual({ agent_id: 'gina' });
  expect(existsSync(join(dataDir, 'ledger.db'))).toBe(testLedger() === 'sqlite');
  expect(Object.keys(await ledgerEnv(dataDir))).toEqual(
    testLedger() === 'postgres' ? ['SVC_RELAY_LEDGER_DSN_FILE'] : [],
  );
});
