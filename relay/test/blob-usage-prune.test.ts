/**
 * The relay's cleanup loop deletes the blob_usage rows (migration 012) that no longer
 * count, those of blobs older than the stream keeps anything, also of an agent that never
 * uploads again (its own next upload would have dropped them, but there is none). A real
 * relay with its bus, on the run's test ledger (SVC_TEST_LEDGER=postgres: PostgreSQL).
 */
import { randomBytes } from 'node:crypto';
import { until } from '@svc/test-harness';
import type { TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { STREAM_MAX_AGE_MS } from '../src/bus/index.js';
import { BLOB_USAGE_PRUNE_INTERVAL_MS } from '../src/relay.js';

let relay: BusRelay;
let alice: TestAgent;
let bob: TestAgent;
let carol: TestAgent;

beforeAll(async () => {
  // the cleanup loop comes round every 20 ms; it prunes blob usage once an hour of the relay's clock
  relay = await inProcessBusRelay({ SVC_RELAY_AGENT_MAX_BLOB_BYTES: String(1024 * 1024) }, { cleanupIntervalMs: 20 });
  [alice, bob, carol] = await Promise.all([relay.enroll('alice'), relay.enroll('bob'), relay.enroll('carol')]);
}, 60_000);

afterAll(async () => {
  await relay?.close();
});

async function upload(from: TestAgent, to: TestAgent): Promise<string> {
  const res = await fetch(`${relay.url}/api/v1/blobs?for=${to.number}`, {
    method: 'POST',
    headers: { ...from.auth, 'content-type': 'application/octet-stream' },
    body: randomBytes(1024),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { blob_id: string }).blob_id;
}

/** The blob ids in blob_usage, read from the relay's own ledger. */
async function usageRows(): Promise<string[]> {
  const rows = await relay.relay.context.ledger.sql.all<{ blob_id: string }>(
    'SELECT blob_id FROM blob_usage ORDER BY blob_id',
  );
  return rows.map((r) => r.blob_id);
}

it('deletes the rows of blobs past the stream age, of an agent that uploads no more, and keeps the others', async () => {
  const away = STREAM_MAX_AGE_MS + 60 * 60 * 1000;
  relay.advance(-away);
  // alice uploads once, a month and an hour ago, then never again
  const old = await upload(alice, bob);
  // (a round that prunes now has a cutoff a month before this upload: the row stays)
  expect(await usageRows()).toContain(old);
  relay.advance(away);
  const recent = await upload(carol, bob);
  // past the hour since any earlier round: the next round prunes
  relay.advance(BLOB_USAGE_PRUNE_INTERVAL_MS);
  await until(
    async () => !(await usageRows()).includes(old),
    10_000,
    "alice's row of a blob past the stream age to go",
  );
  expect(await usageRows()).toEqual([recent]);
});

it('prunes at most once an hour of the relay clock, however often the cleanup loop comes round', async () => {
  const { ledger, stores } = relay.relay.context;
  let rounds = 0;
  let prunes = 0;
  const pruneChallenges = ledger.pruneChallenges.bind(ledger);
  const prune = stores.blobUsage.prune.bind(stores.blobUsage);
  ledger.pruneChallenges = (now) => {
    rounds++;
    return pruneChallenges(now);
  };
  stores.blobUsage.prune = (since) => {
    prunes++;
    return prune(since);
  };
  try {
    // a row past the stream age again, made just after the last prune
    const away = STREAM_MAX_AGE_MS + 60 * 60 * 1000;
    relay.advance(-away);
    const old = await upload(alice, bob);
    relay.advance(away);
    const from = rounds;
    await until(async () => rounds >= from + 10, 10_000, 'ten more rounds of the cleanup loop');
    expect(prunes).toBe(0);
    expect(await usageRows()).toContain(old);
    // an hour later on the relay's clock: the next round prunes it, once
    relay.advance(BLOB_USAGE_PRUNE_INTERVAL_MS);
    await until(async () => !(await usageRows()).includes(old), 10_000, 'the row past the stream age to go');
    const after = rounds;
    await until(async () => rounds >= after + 10, 10_000, 'ten more rounds of the cleanup loop');
    expect(prunes).toBe(1);
  } finally {
    ledger.pruneChallenges = pruneChallenges;
    stores.blobUsage.prune = prune;
  }
});
