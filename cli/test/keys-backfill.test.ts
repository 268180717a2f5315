/**
 * `svc keys backfill` against a real daemon on a real relay: an agent whose published key
 * record is unsigned (enrolled before records were signed) or behind this machine's keys (a
 * relay whose ledger went back in time) gets a signed record of the vault's keys; a record
 * the vault did not sign is reported and never overwritten; --dry-run changes nothing.
 */
import { fromBase64url, type KeyDirectoryEntry, type KeyRecord, keyRecordBytes } from '@svc/shared';
import { ed25519Verify } from '@svc/shared/node';
import { until } from '@svc/test-harness';
import { startDaemon, type TestDaemon, trustRelay } from '@svc/test-harness/daemon';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from './helpers.js';

let relay: BusRelay;
let d: TestDaemon;
const run = (argv: string[]) => svc(argv, { env: { SVC_HOME: d.home, SVC_AGENT: '' }, link: d.client });
const sql = () => relay.relay.context.ledger.sql;
const rowOf = `(SELECT id FROM agents WHERE agent_id = ? AND revoked_at IS NULL)`;

/** What the relay publishes for `agent`, as any peer would read it. */
async function published(agent: string): Promise<KeyDirectoryEntry> {
  const token = (await d.client.token('dave')).access_token;
  const res = await fetch(`${relay.url}/api/v1/agents/${agent}/keys`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as KeyDirectoryEntry;
}

/** Whether `record` carries the agent's own signature over its statement (what a peer's pin requires). */
async function signedBy(agent: string, record: KeyRecord): Promise<boolean> {
  const entry = await published(agent);
  if (record.signature === null) return false;
  const statement = keyRecordBytes({ ...entry, ...record });
  const key = (await d.client.keys(agent)).signing_public_key;
  return ed25519Verify(fromBase64url(key), statement, fromBase64url(record.signature));
}

beforeAll(async () => {
  [relay, d] = await Promise.all([inProcessBusRelay(), startDaemon()]);
  await trustRelay(relay, d);
  for (const agentId of ['carol', 'dave']) {
    await d.client.register({ enrollment_code: await relay.grant(agentId), name: agentId });
  }
  await d.client.registerLocal({ name: 'loc' });
  // a machine's leaf-uplink identity (nats-relay only): the relay's key routes are not its
  await d.client.register({ enrollment_code: await relay.grant('up', undefined, ['nats-relay']), name: 'up' });
  const connected = async () =>
    (await d.client.status()).agents.filter((a) => a.kind === 'agent').every((a) => a.session === 'connected');
  await until(connected, 20_000, 'both connected');
}, 60_000);

afterAll(async () => {
  await d?.daemon.close();
  await relay?.close();
});

describe('svc keys backfill', () => {
  it('with every record signed: nothing to do, exit 0; a local agent has no relay', async () => {
    const r = await run(['keys', 'backfill', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      { agent: 'carol', agent_number: 'carol', state: 'signed', relay_version: 1, uploaded_version: null },
      { agent: 'dave', agent_number: 'dave', state: 'signed', relay_version: 1, uploaded_version: null },
      { agent: 'loc', agent_number: 'loc', state: 'local', relay_version: null, uploaded_version: null },
      { agent: 'up', agent_number: 'up', state: 'uplink', relay_version: null, uploaded_version: null },
    ]);
    const text = await run(['keys', 'backfill']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe(
      [
        'AGENT  NUMBER  RELAY KEY RECORD',
        'carol  carol   nothing to do: the relay publishes its keys signed (version 1)',
        'dave   dave    nothing to do: the relay publishes its keys signed (version 1)',
        'loc    loc     a local agent: no relay publishes its keys',
        "up     up      this machine's uplink identity: it sends no messages, no peer reads its keys",
        '',
      ].join('\n'),
    );
  });

  it('signs an unsigned version 1: --dry-run only says so, then version 2 is the same keys, signed', async () => {
    // an incarnation enrolled before version 1 was signed: the relay derives it, unsigned
    await sql().run(`DELETE FROM agent_key_records WHERE agent_row = ${rowOf}`, ['carol']);
    const before = await published('carol');
    expect(before.current).toMatchObject({ version: 1, signature: null });

    // svc doctor says so, and what to run
    const advice =
      'agent carol: its relay publishes version 1 of its keys unsigned (enrolled before key records were signed), so peers send nothing to it; run svc keys backfill --as carol';
    expect(JSON.parse((await run(['doctor', '--json'])).stdout).problems).toContain(advice);

    const dry = await run(['keys', 'backfill', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      'carol  carol   would publish a signed version 2: its relay publishes version 1 of its keys unsigned (enrolled before key records were signed), so peers send nothing to it\n',
    );
    expect(dry.stdout).toMatch(/\nRun svc keys backfill without --dry-run to publish them\.\n$/);
    expect(await published('carol')).toEqual(before);

    const r = await run(['keys', 'backfill', '--as', 'carol', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      { agent: 'carol', agent_number: 'carol', state: 'unsigned', relay_version: 1, uploaded_version: 2 },
    ]);
    const after = await published('carol');
    expect(after.current).toMatchObject({
      version: 2,
      signing_public_key: before.current.signing_public_key,
      encryption_public_key: before.current.encryption_public_key,
    });
    expect(await signedBy('carol', after.current)).toBe(true);
    expect(JSON.parse((await run(['keys', 'backfill', '--as', 'carol', '--json'])).stdout)[0].state).toBe('signed');
    expect(JSON.parse((await run(['doctor', '--json'])).stdout).problems).not.toContain(advice);
    // messages still flow both ways
    const sent = await d.client.send('dave', { to: 'carol', content: 'after the backfill' });
    await until(
      async () => (await d.client.inbox('carol', { source: 'local' })).some((m) => m.message_id === sent.message_id),
      15_000,
      'carol receives',
    );
  }, 60_000);

  it('publishes the current key again where the relay went back to an earlier rotation', async () => {
    const rotated = await d.client.generateKeys('dave');
    expect(rotated.relay_version).toBe(2);
    // the relay's ledger restored from before the rotation: version 2 gone, the row's keys back at version 1
    const v1 = (await published('dave')).history[0] as KeyRecord;
    await sql().run(`DELETE FROM agent_key_records WHERE agent_row = ${rowOf} AND version = 2`, ['dave']);
    await sql().run(`UPDATE agents SET encryption_public_key = ? WHERE id = ${rowOf}`, [
      v1.encryption_public_key,
      'dave',
    ]);
    expect((await published('dave')).current.encryption_public_key).not.toBe(rotated.encryption_public_key);

    const r = await run(['keys', 'backfill', '--as', 'dave']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(
      "dave   dave    published signed version 2: its relay published version 1 with another encryption key than this machine's\n",
    );
    const after = await published('dave');
    expect(after.current.encryption_public_key).toBe(rotated.encryption_public_key);
    expect(await signedBy('dave', after.current)).toBe(true);
  }, 60_000);

  it('a record the vault did not sign is reported, never overwritten: own_key_mismatch, exit 1', async () => {
    // the current record's signature replaced by another agent's (a signature, over another statement)
    const forged = (await published('dave')).history[0]?.signature as string;
    expect(forged).toEqual(expect.any(String));
    // (records are append-only: the row is written again, as a tampered ledger would hold it)
    const cur = (await published('carol')).current;
    await sql().run(`DELETE FROM agent_key_records WHERE agent_row = ${rowOf} AND version = 2`, ['carol']);
    await sql().run(
      `INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at,
         signature, previous_signature, recorded_at) VALUES (${rowOf}, 2, ?, ?, ?, ?, NULL, 0)`,
      ['carol', cur.signing_public_key, cur.encryption_public_key, cur.created_at, forged],
    );
    const before = await published('carol');

    const r = await run(['keys', 'backfill', '--json']);
    expect(r.code).toBe(1);
    const rows = JSON.parse(r.stdout);
    expect(rows[0]).toEqual({
      agent: 'carol',
      agent_number: 'carol',
      state: 'bad_signature',
      relay_version: 2,
      uploaded_version: null,
      error: {
        code: 'own_key_mismatch',
        message:
          "The relay publishes the keys of carol under a signature that does not verify (version 2); nothing was uploaded. Ask the relay's operator to check it.",
      },
    });
    expect(rows.slice(1).map((x: { state: string }) => x.state)).toEqual(['signed', 'local', 'uplink']);
    expect(await published('carol')).toEqual(before);
    expect(JSON.parse((await run(['doctor', '--json'])).stdout).problems).toContain(
      `agent carol: ${rows[0].error.message}`,
    );

    const signing = await run(['keys', 'upload-signing', '--as', 'carol']);
    expect(signing.code).toBe(1);
    expect(signing.stderr).toMatch(
      /^svc: error: The relay publishes the keys of carol under a signature .*\(own_key_mismatch\)\n$/,
    );
    expect(await published('carol')).toEqual(before);
  }, 60_000);

  it('--as an agent this machine does not have: unknown_agent, exit 1', async () => {
    const r = await run(['keys', 'backfill', '--as', 'nobody']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('svc: error: No local agent "nobody". (unknown_agent)\n');
  });
});
