/**
 * The status-line file the daemon keeps for cli/bin/svc-statusline, against a REAL relay:
 * written (0600) at start, rewritten when a session connects, a message arrives and is
 * acknowledged, and removed on a clean shutdown; the shell script prints its rows.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { until } from '@svc/test-harness';
import type { TestDaemon } from '@svc/test-harness/daemon';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '../../cli/bin/svc-statusline');

let stage: DaemonsOnRelay<'alice' | 'bob'>;
let a: TestDaemon;
let b: TestDaemon;

const fileOf = (d: TestDaemon) => join(d.home, 'run', 'statusline');
const rows = (d: TestDaemon) => readFileSync(fileOf(d), 'utf8');
const script = (d: TestDaemon, agent?: string) =>
  execFileSync('/bin/sh', [SCRIPT], {
    env: { PATH: process.env.PATH, SVC_HOME: d.home, ...(agent ? { SVC_AGENT: agent } : {}) },
    encoding: 'utf8',
  });

beforeAll(async () => {
  // no agent yet: the first test looks at the file before anyone registers
  stage = await startDaemonsOnRelay({ agents: ['alice', 'bob'], daemon: { heartbeatMs: 200 }, register: false });
  ({ alice: a, bob: b } = stage.daemons);
}, 90_000);

afterAll(() => stage?.close());

describe('the status-line file', () => {
  it('exists from the start, 0600, with no agent yet', () => {
    expect(rows(b)).toBe('*\tsvc: no agent\n');
    expect(statSync(fileOf(b)).mode & 0o777).toBe(0o600);
    expect(script(b)).toBe('svc: no agent\n');
  });

  it('follows registration, an arriving message and its acknowledgement; the script prints it', async () => {
    const { url, bundle, grant } = stage;
    for (const d of [a, b]) await d.client.fetchDeployment({ url, trust_bundle: bundle, name: 'dev' });
    await a.client.register({ enrollment_code: await grant('alice'), name: 'alice' });
    const bob = await b.client.register({ enrollment_code: await grant('bob'), name: 'bob' });
    await until(async () => rows(b).includes('bob ● connected'), 20_000, 'bob connected in the file');
    await until(async () => rows(a).includes('alice ● connected'), 20_000, 'alice connected in the file');
    const connected = 'svc bob ● connected';
    // one row for all, one per name and one per number (one row when they are the same)
    const keys = ['*', ...new Set(['bob', bob.agent_number])];
    expect(rows(b)).toBe(keys.map((k) => `${k}\t${connected}\n`).join(''));

    const m = await a.client.send('alice', { to: 'bob', content: 'hello' });
    await until(async () => rows(b).includes('1 unread'), 15_000, 'one unread in the file');
    expect(script(b)).toBe('svc bob ● connected · 1 unread\n');
    expect(script(b, 'bob')).toBe('svc bob ● connected · 1 unread\n');
    expect(script(b, bob.agent_number)).toBe('svc bob ● connected · 1 unread\n');
    expect(script(b, 'carol')).toBe('svc: no agent carol\n');

    // acknowledging is an API call: the file is rewritten before the answer is read
    await b.client.ack('bob', m.message_id);
    expect(script(b)).toBe(`${connected}\n`);
    expect(statSync(fileOf(b)).mode & 0o777).toBe(0o600);
  });

  it('is removed on a clean shutdown: the script says the daemon is down', async () => {
    await b.daemon.close();
    expect(existsSync(fileOf(b))).toBe(false);
    expect(script(b)).toBe('svc: daemon down (svc start)\n');
  });
});
