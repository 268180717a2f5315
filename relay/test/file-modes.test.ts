/**
 * Every file the relay creates that holds a secret (the ledger and its -wal/-shm, which
 * hold webhook secrets; keys; NATS seeds and creds; the deployment signer; the nats-server
 * config it writes) is 0600, even inside a pre-existing world-readable (0755) data dir,
 * and a ledger left world-readable by an older relay is tightened when it opens. On a
 * PostgreSQL ledger (SVC_TEST_LEDGER=postgres) the data dir holds no ledger file at all.
 */
import { chmodSync, closeSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { call, sealFor } from '@svc/test-harness/agent-client';
import { inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { onPostgres } from '@svc/test-harness/test-ledger';
import { describe, expect, it } from 'vitest';
import { Ledger } from '../src/ledger/ledger.js';

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}

const SECRET = [
  /^ledger\.db(-wal|-shm|-journal)?$/,
  /\.nk$/,
  /\.creds$/,
  /\.key\.json$/,
  /^nats-server\.conf$/,
  /^state\.json$/,
];
const mode = (f: string) => statSync(f).mode & 0o777;

describe('file modes', () => {
  it('secret files are 0600 inside a pre-existing 0755 data dir', async () => {
    const dataDir = join(tempDir(), 'data');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const relay = await inProcessBusRelay({ SVC_RELAY_DATA_DIR: dataDir });
    try {
      const [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
      // a webhook secret and an envelope in the ledger, so its WAL has been written
      await call(relay.url, 'PATCH', '/api/v1/agents/me', { endpoint_url: 'https://hooks.example.com/in' }, bob.auth);
      await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [sealFor(alice, bob, 'x')] }, alice.auth);
      const files = walk(dataDir).map((f) => ({ f, name: f.split('/').pop() as string }));
      const secret = files.filter(({ name }) => SECRET.some((re) => re.test(name)));
      const names = secret.map(({ f }) => relative(dataDir, f));
      if (onPostgres()) {
        // the ledger (and its webhook secrets) is in PostgreSQL: no file of it here
        expect(names.filter((n) => n.startsWith('ledger.db'))).toEqual([]);
      } else {
        expect(names).toEqual(expect.arrayContaining(['ledger.db', 'ledger.db-wal', 'ledger.db-shm']));
      }
      expect(names).toEqual(expect.arrayContaining(['keys/relay.key.json']));
      expect(names).toEqual(expect.arrayContaining(['deployment/signer.key.json', 'nats/keys/system-user.creds']));
      const wrong = secret
        .filter(({ f }) => mode(f) !== 0o600)
        .map(({ f }) => `${relative(dataDir, f)} ${mode(f).toString(8)}`);
      expect(wrong).toEqual([]);
    } finally {
      await relay.close();
    }
  }, 60_000);

  it('a ledger left world-readable is tightened to 0600 when it opens', async () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const file = join(dir, 'ledger.db');
    for (const f of [file, `${file}-wal`, `${file}-shm`]) {
      closeSync(openSync(f, 'w', 0o644));
      chmodSync(f, 0o644);
    }
    const ledger = await Ledger.open(file);
    try {
      expect([file, `${file}-wal`, `${file}-shm`].map(mode)).toEqual([0o600, 0o600, 0o600]);
    } finally {
      await ledger.close();
    }
  });
});
