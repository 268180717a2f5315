/**
 * What `svc` says, against a real daemon, about an agent the daemon keeps out of service
 * because its archive cannot be used: doctor names the code, the file and what to do (exit 1),
 * agent list and start show it, a command as that agent fails with archive_unusable, and
 * the machine's other agent goes on working.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { until } from '@svc/test-harness';
import { type AgentFiles, homeWithAgents, startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc } from './helpers.js';

const homes: TestDaemon[] = [];
/** A daemon on a home of these local agents, some of whose files are spoiled (see homeWithAgents). */
async function homeWith(agents: Record<string, AgentFiles>): Promise<TestDaemon> {
  const t = await startDaemon(await homeWithAgents('svc-cli-unusable-', agents));
  homes.push(t);
  return t;
}
afterAll(async () => {
  for (const h of homes) {
    await h.daemon.close();
    await rm(h.home, { recursive: true, force: true });
  }
});
const runIn = (t: TestDaemon, argv: string[]) =>
  svc(argv, { env: { SVC_HOME: t.home, SVC_AGENT: '' }, link: t.client });

let d: TestDaemon | undefined;
let home: string;
let file: string;

beforeAll(async () => {
  // two agents of this machine only (no relay needed): ann, and cat whose archive gets damaged
  d = await homeWith({ ann: 'ok', cat: 'archive-damaged' });
  home = d.home;
  file = join(home, 'agents', 'cat', 'archive.db');
}, 30_000);

const run = (argv: string[]) => runIn(d!, argv);

describe('an agent out of service (its archive cannot be used)', () => {
  it('svc doctor reports it with the code, the file and what to do, and exits 1', async () => {
    const human = await run(['doctor']);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/^agents: +ann \(local\), cat \(unusable\)$/m);
    expect(human.stdout).toContain(
      `  - agent cat is out of service (archive_unusable): The archive ${file} is damaged (file is not a database); it was not changed: restore it from a backup, or move it away`,
    );

    const json = await run(['doctor', '--json']);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.ok).toBe(false);
    expect(report.agents.find((a: { name: string }) => a.name === 'cat')).toMatchObject({
      session: 'unusable',
      unusable: {
        error: 'archive_unusable',
        file,
        hint: expect.stringMatching(/finds it repaired \(no restart needed\)$/),
      },
    });
    expect(report.problems).toEqual([expect.stringMatching(/^agent cat is out of service \(archive_unusable\)/)]);
  });

  it('svc agent list shows it; svc start says the daemon runs, and warns about it', async () => {
    const list = JSON.parse((await run(['agent', 'list', '--json'])).stdout) as { name: string; session: string }[];
    expect(list.map((a) => [a.name, a.session])).toEqual([
      ['ann', 'offline'],
      ['cat', 'unusable'],
    ]);
    const start = await run(['start', '-b']);
    expect(start.code).toBe(0);
    expect(start.stdout).toMatch(/^The svc daemon already runs/);
    expect(start.stderr).toBe(
      `svc: warning: agent cat is out of service (archive_unusable): ${
        (await d!.client.status()).agents.find((a) => a.name === 'cat')?.unusable?.message
      }\n`,
    );
    expect(start.stderr).toContain(file);
  });

  it('a command as that agent fails with archive_unusable and the message; the other agent works', async () => {
    const refused = await run(['msg', 'check', '--as', 'cat', '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      error: 'archive_unusable',
      message: expect.stringContaining(`Agent cat is out of service: The archive ${file} is damaged`),
    });
    const human = await run(['send', '--as', 'cat', 'ann', 'hello']);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/^svc: error: Agent cat is out of service: .* \(archive_unusable\)\n$/);

    const ok = await run(['msg', 'check', '--as', 'ann', '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual([]);
  });
});

describe('svc doctor checks each archive: a quick check kept six hours, or --full-integrity now', () => {
  it('a damaged page is a problem with what to do; a passed check answers from its receipt', async () => {
    const t = await homeWith({ ann: 'ok', bea: 'archive-page-damaged' });
    const archiveOf = (name: string) => join(t.home, 'agents', name, 'archive.db');
    const first = await runIn(t, ['doctor', '--json']);
    expect(first.code, first.stderr).toBe(1);
    const report = JSON.parse(first.stdout);
    expect(report.archives).toEqual([
      {
        agent: 'ann',
        file: archiveOf('ann'),
        kind: 'quick',
        checked_at: expect.any(String),
        ok: true,
        problems: [],
        from_receipt: false,
      },
      {
        agent: 'bea',
        file: archiveOf('bea'),
        kind: 'quick',
        checked_at: expect.any(String),
        ok: false,
        problems: expect.arrayContaining([expect.stringMatching(/page \d+/)]),
        from_receipt: false,
      },
    ]);
    expect(report.problems).toEqual([
      expect.stringMatching(
        new RegExp(
          `^agent bea: its archive ${archiveOf('bea')} failed SQLite's quick integrity check: .+\\. Stop the daemon \\(svc stop\\), then restore the file from a backup`,
        ),
      ),
    ]);
    // within six hours: ann's receipt answers, bea (no receipt for a failed check) is checked again
    const second = JSON.parse((await runIn(t, ['doctor', '--json'])).stdout);
    expect(
      second.archives.map((a: { agent: string; ok: boolean; from_receipt: boolean }) => [
        a.agent,
        a.ok,
        a.from_receipt,
      ]),
    ).toEqual([
      ['ann', true, true],
      ['bea', false, false],
    ]);
    const full = await runIn(t, ['doctor', '--full-integrity']);
    expect(full.code).toBe(1);
    expect(full.stdout).toMatch(/^archives: +ann: ok \(full check, now\), bea: DAMAGED \(full check, now\)$/m);
    expect(full.stdout).toContain(
      `  - agent bea: its archive ${archiveOf('bea')} failed SQLite's full integrity check: `,
    );
    // --as: that agent's archive alone, its full check's receipt answering
    const ann = await runIn(t, ['doctor', '--as', 'ann']);
    expect(ann.code, ann.stdout).toBe(0);
    expect(ann.stdout).toMatch(/^archives: +ann: ok \(full check, receipt of \S+\)$/m);
  });
});

describe('svc recover reset-db: an empty archive, the old one set aside, pinned peer keys kept', () => {
  it('for an agent in service and for one out of service (its archive not a database)', async () => {
    const dir = await homeWithAgents('svc-cli-reset-', { ann: 'ok', cat: 'archive-damaged' });
    const annFile = join(dir, 'agents', 'ann', 'archive.db');
    // a peer's key pinned in ann's archive (the daemon is not running)
    const db = new Database(annFile);
    db.prepare(
      "INSERT INTO peer_keys (agent_number, signing_public_key, encryption_public_key, pinned_at) VALUES ('peer-1', 'sig', 'enc', '2026-01-01T00:00:00Z')",
    ).run();
    db.close();
    const t = await startDaemon(dir);
    homes.push(t);
    const sessionOf = async (name: string) => (await t.client.status()).agents.find((a) => a.name === name)?.session;

    // without --yes and without a terminal: nothing done
    const asked = await runIn(t, ['recover', 'reset-db', '--agent', 'ann']);
    expect(asked.code).toBe(1);
    expect(asked.stderr).toMatch(/Pass --yes to confirm without a terminal\. \(confirmation_required\)\n$/);
    expect(readdirSync(join(dir, 'agents', 'ann')).some((f) => f.includes('.reset-'))).toBe(false);
    const none = await runIn(t, ['recover', 'reset-db', '--yes']);
    expect(none.stderr).toMatch(/\(agent_required\)\n$/);

    const r = await runIn(t, ['recover', 'reset-db', '--agent', 'ann', '--yes', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const answer = JSON.parse(r.stdout) as { agent: string; set_aside: string; pins_kept: number | null };
    expect(answer).toEqual({ agent: 'ann', set_aside: expect.stringMatching(/archive\.db\.reset-/), pins_kept: 1 });
    // the old file is there as it was (with its pin); the new one has the pin and nothing else
    const old = new Database(answer.set_aside, { readonly: true });
    expect(old.prepare('SELECT agent_number FROM peer_keys').all()).toEqual([{ agent_number: 'peer-1' }]);
    old.close();
    await until(async () => (await sessionOf('ann')) === 'offline', 10_000, 'ann in service again');
    const fresh = new Database(annFile, { readonly: true });
    expect(fresh.prepare('SELECT agent_number FROM peer_keys').all()).toEqual([{ agent_number: 'peer-1' }]);
    expect(fresh.prepare('SELECT count(*) AS n FROM messages').get()).toEqual({ n: 0 });
    fresh.close();

    // cat's archive is no database: nothing to carry over, and cat is back in service
    expect(await sessionOf('cat')).toBe('unusable');
    const c = await runIn(t, ['recover', 'reset-db', '--agent', 'cat', '--yes']);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout).toMatch(
      /^Set aside cat's archive as .*archive\.db\.reset-\S+ and started an empty one\.\nThe old file could not be read: no pinned peer key was kept/,
    );
    await until(async () => (await sessionOf('cat')) === 'offline', 10_000, 'cat in service again');
    expect((await runIn(t, ['msg', 'check', '--as', 'cat', '--json'])).code).toBe(0);
  });
});

describe('svc deregister of an agent out of service (its archive cannot be used)', () => {
  it('removes it, named with its number; an agent of this machine alone has no relay to revoke it on', async () => {
    const t = await homeWith({ ann: 'ok', cat: 'archive-damaged' });
    const r = await runIn(t, ['deregister', 'cat', '--yes']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      'Removed cat (cat) from this machine (an agent of this machine alone: no relay to revoke it on).\n',
    );
    expect((await t.client.status()).agents.map((a) => a.name)).toEqual(['ann']);
  });
});

describe('svc sync of every agent while one is out of service', () => {
  it('syncs the others, says which it left out and why, and exits 1', async () => {
    const r = await run(['sync', '--json']);
    expect(r.code, r.stderr).toBe(1);
    // --json names the agent left out, with its code, as the warning does
    expect(JSON.parse(r.stdout)).toEqual([
      { agent: 'ann', fetched: 0, archived: 0, rejected: 0, receipts: 0 },
      { agent: 'cat', error: 'archive_unusable', message: expect.stringContaining(file) },
    ]);
    expect(r.stderr).toMatch(
      /^svc: warning: agent cat is out of service \(archive_unusable\), not synced: The archive .* is damaged .*\n$/,
    );
    expect(r.stderr).toContain(file);
  });

  it('svc sync of an agent of this machine only counts zeros: it has no relay to pull from', async () => {
    const r = await run(['sync', '--as', 'ann', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([{ agent: 'ann', fetched: 0, archived: 0, rejected: 0, receipts: 0 }]);
  });
});

describe('a warning is one line whatever the damaged file holds', () => {
  it('svc sync: an agent.json of a word and a line break is named in one line, escaped', async () => {
    const dir = await homeWithAgents('svc-cli-unusable-', { ann: 'ok', eve: 'config-damaged' });
    writeFileSync(join(dir, 'agents', 'eve', 'agent.json'), 'nope\n');
    const t = await startDaemon(dir);
    homes.push(t);
    const r = await runIn(t, ['sync', '--json']);
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')).toEqual([
      expect.stringMatching(/^svc: warning: agent eve is out of service \(config_invalid\), not synced: .*nope\\x0a/),
      '',
    ]);
    expect(JSON.parse(r.stdout)).toContainEqual(expect.objectContaining({ agent: 'eve', error: 'config_invalid' }));
  });
});

describe('an agent out of service because its agent.json cannot be read', () => {
  let d2: TestDaemon | undefined;
  let home2: string;
  let config: string;

  beforeAll(async () => {
    d2 = await homeWith({ ann: 'ok', dot: 'config-damaged' });
    home2 = d2.home;
    config = join(home2, 'agents', 'dot', 'agent.json');
  }, 30_000);

  const run2 = (argv: string[]) => runIn(d2!, argv);

  it('svc doctor names the code, the file and what to do, and nothing else about it; exit 1', async () => {
    const human = await run2(['doctor']);
    expect(human.code).toBe(1);
    expect(human.stdout).toMatch(/^agents: +ann \(local\), dot \(unusable\)$/m);
    expect(human.stdout.split('\n').filter((l) => l.startsWith('  - '))).toEqual([
      `  - agent dot is out of service (config_invalid): The agent config ${config} is damaged (${
        human.stdout.match(/is damaged \((.*?)\); it was not changed/)?.[1]
      }); it was not changed: restore it from a backup (the next command for the agent, or svc agent list, finds it repaired (no restart needed)); or give the agent up: svc deregister dot --local sets its directory ${join(home2, 'agents', 'dot')} aside (its archive is in it) and, if it was enrolled on a relay, ask that relay's operator to revoke it (svc-relay agent revoke).`,
    ]);
    // every svc command the advice names is one this svc has (it once named `svc status`)
    const named = [...human.stdout.matchAll(/\bsvc ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/g)];
    expect(named.length).toBeGreaterThan(1);
    for (const [, command, sub] of named) {
      const help = await run2([command as string, ...(sub && sub !== 'dot' ? [sub] : []), '--help']);
      expect(help.code, `svc ${command} ${sub ?? ''}: ${help.stderr}`).toBe(0);
    }
    const report = JSON.parse((await run2(['doctor', '--json'])).stdout);
    expect(report.agents.find((a: { name: string }) => a.name === 'dot')).toEqual({
      name: 'dot',
      session: 'unusable',
      session_error: expect.any(String),
      unusable: { error: 'config_invalid', file: config, message: expect.any(String), hint: expect.any(String) },
    });
  });

  it('svc agent list shows it by name; a command as it fails with config_invalid; the only other agent is the default', async () => {
    const list = await run2(['agent', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ann +ann +local +offline$/m);
    expect(list.stdout).toMatch(/^dot +- +- +unusable$/m);
    const json = JSON.parse((await run2(['agent', 'list', '--json'])).stdout) as { name: string; session: string }[];
    expect(json.map((a) => [a.name, a.session])).toEqual([
      ['ann', 'offline'],
      ['dot', 'unusable'],
    ]);

    const refused = await run2(['msg', 'check', '--as', 'dot', '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      error: 'config_invalid',
      message: expect.stringContaining(`Agent dot is out of service: The agent config ${config} is damaged`),
    });
    // without --as: the one agent the daemon can describe
    const ok = await run2(['msg', 'check', '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual([]);
  });

  it('svc deregister --local gives it up (no number to show); without --local it says why not, asking nothing', async () => {
    const refused = await run2(['deregister', 'dot']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^svc: error: Agent dot's agent\.json cannot be read, so it cannot be revoked from this machine: `svc deregister dot --local` forgets it here .*\(config_invalid\)\n$/,
    );
    const removed = await run2(['deregister', 'dot', '--local', '--yes']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(
      "Removed dot from this machine; it was not revoked (if it was enrolled on a relay, ask that relay's operator: svc-relay agent revoke).\n",
    );
    const list = await run2(['agent', 'list']);
    expect(list.stdout).not.toMatch(/^dot /m);
    expect(list.stdout).toMatch(/^ann /m);
  });
});

describe('without --as, an agent out of service is never the choice, and its failure is the one said', () => {
  it("the only agent's agent.json cannot be read: its config_invalid and message, not 'register one'", async () => {
    const t = await homeWith({ dot: 'config-damaged' });
    const file = join(t.home, 'agents', 'dot', 'agent.json');
    const r = await runIn(t, ['inbox', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      error: 'config_invalid',
      message: expect.stringMatching(new RegExp(`^Agent dot is out of service: The agent config ${file} is damaged`)),
    });
    const human = await runIn(t, ['inbox']);
    expect(human.stderr).toMatch(
      /^svc: error: Agent dot is out of service: .*restore it from a backup.* \(config_invalid\)\n$/,
    );
    expect(human.stderr).not.toMatch(/svc register/);
  });

  it("the only agent's archive cannot be used: its archive_unusable and message", async () => {
    const t = await homeWith({ eli: 'archive-damaged' });
    const r = await runIn(t, ['inbox', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      error: 'archive_unusable',
      message: expect.stringContaining(
        `Agent eli is out of service: The archive ${join(t.home, 'agents', 'eli', 'archive.db')}`,
      ),
    });
  });

  it('an agent whose archive cannot be used beside one whose agent.json cannot be read: both named, not the first alone (the agent list has only the first)', async () => {
    const t = await homeWith({ eli: 'archive-damaged', fay: 'config-damaged' });
    const r = await runIn(t, ['inbox', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      error: 'archive_unusable',
      message:
        'Every local agent is out of service: eli (archive_unusable), fay (config_invalid); `svc doctor` says which file of each cannot be used and what to do.',
    });
  });

  it('one agent in service beside one whose archive cannot be used: the one in service, as beside a damaged agent.json', async () => {
    const t = await homeWith({ ann: 'ok', cat: 'archive-damaged' });
    const ok = await runIn(t, ['msg', 'check', '--json', '-vv']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual([]);
    expect(ok.stderr).toContain('svc: debug: agent ann (the only local agent in service)\n');
  });

  it('every agent out of service: names each with its code and points at svc doctor', async () => {
    const t = await homeWith({ eli: 'archive-damaged', fay: 'config-damaged', gus: 'archive-damaged' });
    const r = await runIn(t, ['inbox', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      error: 'archive_unusable',
      message:
        'Every local agent is out of service: eli (archive_unusable), fay (config_invalid), gus (archive_unusable); `svc doctor` says which file of each cannot be used and what to do.',
    });
  });
});
