/**
 * The local operator commands and dev mode as an operator runs them: from another
 * directory, pointed at the relay's data dir and nothing else; a dev relay restarted on
 * the same data dir; its logs on a terminal and in a pipe.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnrollmentCode } from '@svc/shared';
import { tempDir } from '@svc/test-harness';
import { call, enrollmentBody, newIdentity } from '@svc/test-harness/agent-client';
import { bareEnv, type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, describe, expect, it } from 'vitest';

/** Runs svc-relay from `cwd` (a directory of its own, not the checkout) with no relay setting in its environment. */
const relayCli = (args: string[], cwd: string) => runRelayCli(args, {}, { cwd, bare: true });

const started: RelayProcess[] = [];
const dirs: string[] = [];
const dir = (prefix: string) => {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
};
afterAll(async () => {
  await Promise.all(started.map((r) => r.stop()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const devAgent = (out: string) => /Enrollment code for agent (\S+) /.exec(out)?.[1];
const devCode = (out: string) => /register --enrollment-grant (svce1\.\S+)/.exec(out)?.[1];

describe('svc-relay grant and agent revoke, from another directory', () => {
  it('take the URL and tenants from the data dir, and never re-sign the deployment document', async () => {
    const relay = await spawnRelay({ command: 'dev' });
    started.push(relay);
    // the hint dev prints names the exact data dir (grant finds a PostgreSQL ledger from it)
    expect(relay.stdout()).toContain(`grant --data-dir ${relay.dataDir} --agent-id <id>`);
    const documentFile = join(relay.dataDir, 'deployment', 'document.jws');
    const document = readFileSync(documentFile, 'utf8');
    const elsewhere = dir('svc-relay-cwd-');

    // the grant and the printed hint (below) at once: two processes that do not wait on each other
    const granted = relayCli(['grant', '--data-dir', relay.dataDir, '--agent-id', 'zed', '--json'], elsewhere);
    const hint = /Mint more with: (.+?) {3}·/.exec(relay.stdout())?.[1] as string;
    const printed = new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn('sh', ['-c', `${hint.replace('<id>', 'printed')} --json`], {
        cwd: elsewhere,
        env: bareEnv(),
      });
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        out += d;
      });
      child.once('exit', (code) => resolve({ code, out }));
    });
    const g = await granted;
    expect(g.code, g.stderr).toBe(0);
    const code = (JSON.parse(g.stdout) as { enrollment_code: string }).enrollment_code;
    expect(parseEnrollmentCode(code).bindings).toMatchObject({ api_url: relay.url, tenant_id: 'default' });
    expect(readFileSync(documentFile, 'utf8')).toBe(document);

    // the printed hint runs as printed, from elsewhere (the built command: npm test builds first)
    const { code: hintCode, out: hintOut } = await printed;
    expect(hintCode, `${hint}: ${hintOut}`).toBe(0);
    expect(parseEnrollmentCode(JSON.parse(hintOut).enrollment_code).bindings.api_url).toBe(relay.url);
    // in text, stdout is the code alone (CODE=$(svc-relay grant …)); the hint goes to stderr
    const text = await relayCli(['grant', '--data-dir', relay.dataDir, '--agent-id', 'zed-text'], elsewhere);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^svce1\.\S+\n$/);
    expect(text.stderr).toContain(`register --enrollment-grant ${text.stdout.trim()}`);
    // and the fetch a machine needs first, with the relay's URL and the trust bundle's path
    expect(text.stderr).toContain(
      `deployment fetch --url ${relay.url} --trust ${join(relay.dataDir, 'deployment', 'trust-bundle.json')}\n`,
    );
    // an agent id the grant route would refuse is refused here too (it could never sign in)
    for (const id of ['sp ace/..', 'we\nird', 'x'.repeat(257)]) {
      const bad = await relayCli(
        ['grant', '--data-dir', relay.dataDir, '--agent-id', id, '--agent-number', 'fine'],
        elsewhere,
      );
      expect(bad.code, id).not.toBe(0);
      expect(bad.stdout).toBe('');
      expect(bad.stderr).toMatch(
        /agent_id must be letters, digits and _ \. : @ -, at most 256 characters.*validation_failed/,
      );
    }
    // --ttl is whole seconds in range ("90.5" once minted a grant of 90 s)
    for (const ttl of ['90.5', '5', '1e3', '']) {
      const bad = await relayCli(['grant', '--data-dir', relay.dataDir, '--agent-id', 'ttl', '--ttl', ttl], elsewhere);
      expect(bad.code, ttl).toBe(2);
      expect(bad.stdout).toBe('');
      expect(bad.stderr).toContain('give a whole number of seconds from 60 to 2592000');
    }
    // neither wrote anything where it ran
    expect(readdirSync(elsewhere)).toEqual([]);

    const enrolled = await call(relay.url, 'POST', '/api/v1/enrollment', enrollmentBody(code, newIdentity()));
    expect(enrolled.status).toBe(201);
    const revoked = await relayCli(['agent', 'revoke', '--data-dir', relay.dataDir, '--agent-id', 'zed'], elsewhere);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain('revoked zed in tenant default');
    expect(readFileSync(documentFile, 'utf8')).toBe(document);
  }, 60_000);

  it('refuse a data dir that does not exist, and create nothing', async () => {
    const elsewhere = dir('svc-relay-cwd-');
    const missing = join(elsewhere, 'no-such-relay');
    for (const args of [
      ['grant', '--agent-id', 'zed'],
      ['grant', '--data-dir', missing, '--agent-id', 'zed'],
      ['agent', 'revoke', '--data-dir', missing, '--agent-id', 'zed'],
    ]) {
      const r = await relayCli(args, elsewhere);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/no data dir .*; point --data-dir \(or SVC_RELAY_DATA_DIR\) at the relay's data dir/);
    }
    expect(existsSync(missing)).toBe(false);
    expect(readdirSync(elsewhere)).toEqual([]);
  }, 30_000);

  it('serve on a data dir without a deployment says how to create one, and creates nothing', async () => {
    const elsewhere = dir('svc-relay-cwd-');
    const missing = join(elsewhere, 'not-yet');
    const r = await relayCli(['serve', '--data-dir', missing, '--listen', '127.0.0.1:0'], elsewhere);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `no deployment in ${missing}; create one with: svc-relay deployment init --data-dir ${missing}`,
    );
    expect(existsSync(missing)).toBe(false);
  }, 30_000);
});

describe('svc-relay dev restarted on the same data dir', () => {
  // one data dir, started three times in turn (each step needs the one before)
  let first: RelayProcess;
  let agent: string | undefined;

  it('prints its agent and a code; logs are JSON in a pipe', async () => {
    first = await spawnRelay({ command: 'dev' });
    started.push(first);
    agent = devAgent(first.stdout());
    expect(agent, first.stdout()).toMatch(/^agent-[0-9a-f]{6}$/);
    await first.stop();
    const jsonLines = readFileSync(first.logFile, 'utf8').trim().split('\n');
    expect(jsonLines.some((l) => (JSON.parse(l) as { msg?: string }).msg === 'relay listening')).toBe(true);
  }, 60_000);

  it('keeps its agent and mints a new code while that agent is not enrolled; logs are readable when asked', async () => {
    const again = await spawnRelay({ command: 'dev', dataDir: first.dataDir, args: ['--log-format', 'pretty'] });
    started.push(again);
    expect(devAgent(again.stdout())).toBe(agent);
    const code = devCode(again.stdout()) as string;
    expect(parseEnrollmentCode(code).bindings.agent_id).toBe(agent);
    expect((await call(again.url, 'POST', '/api/v1/enrollment', enrollmentBody(code, newIdentity()))).status).toBe(201);
    await again.stop();
    expect(readFileSync(again.logFile, 'utf8')).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}relay listening url=http/m);
  }, 60_000);

  it('mints no code once that agent is enrolled', async () => {
    const third = await spawnRelay({ command: 'dev', dataDir: first.dataDir });
    started.push(third);
    expect(third.stdout()).toContain(`Agent ${agent} is enrolled on this relay already`);
    expect(devCode(third.stdout())).toBeUndefined();
  }, 60_000);
});
