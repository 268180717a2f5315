/**
 * One agent's archive that this svc cannot use (a newer svc wrote it, or it is damaged), or
 * its agent.json that cannot be read, keeps that agent out of service, not the daemon: the
 * daemon starts, the machine's other agents send and receive through a real relay, status
 * names the agent, the file and what to do, every command for the agent answers
 * archive_unusable (config_invalid for the agent.json), its name stays taken, and the file
 * is left as it was. Deregistration gives such an agent up: it revokes one whose config can
 * be read, and sets its directory aside, files untouched.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '@svc/test-harness';
import { agentFile, homeWithAgents, startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../src/archive/migrations/index.js';
import { ALL_AGENTS_KEY } from '../src/client/index.js';

const timing = { outboxRetryMinMs: 50, outboxRetryMaxMs: 200, heartbeatMs: 200 };

let stage: DaemonsOnRelay<'ann' | 'bob'>;
/** ann's daemon as restarted by the test (it also runs cat) */
let annDaemon: TestDaemon | undefined;
const others: TestDaemon[] = [];

const archiveOf = (home: string, agent: string) => agentFile(home, agent, 'archive.db');

/** Where deregistration set the directory of `agent` aside (its one `.deregistered-` directory). */
function setAside(home: string, agent: string): string {
  const dirs = readdirSync(join(home, 'agents')).filter((d) => d.startsWith(`.deregistered-${agent}-`));
  expect(dirs).toHaveLength(1);
  return join(home, 'agents', dirs[0]!);
}

const connected = (d: TestDaemon, name: string) =>
  until(
    async () => (await d.client.status()).agents.find((a) => a.name === name)?.session === 'connected',
    20_000,
    `${name} connected`,
  );

/** A message from `from` to `to`, read from `to`'s archive once it arrived. */
async function deliver(from: TestDaemon, fromAgent: string, to: TestDaemon, toAgent: string, content: string) {
  const sent = await from.client.send(fromAgent, { to: toAgent, content });
  expect(sent.status).toBe('accepted');
  return until(
    async () => (await to.client.inbox(toAgent, { source: 'local' })).find((m) => m.message_id === sent.message_id),
    20_000,
    `${toAgent} receives ${JSON.stringify(content)}`,
  );
}

beforeAll(async () => {
  stage = await startDaemonsOnRelay({ agents: ['ann', 'bob'], daemon: timing });
  // a second agent on ann's machine
  const ann = stage.daemons.ann;
  await ann.client.register({ enrollment_code: await stage.grant('cat'), name: 'cat' });
  await connected(ann, 'cat');
}, 120_000);

afterAll(async () => {
  await annDaemon?.daemon.close();
  await Promise.all(others.map((d) => d.daemon.close()));
  await stage?.close();
});

describe('an agent whose archive cannot be used', () => {
  it('a newer svc wrote it: the daemon starts, the other agent works, the agent is reported and refused; an upgrade brings it back with nothing lost', async () => {
    const { bob } = stage.daemons;
    const ann = stage.daemons.ann;
    const earlier = await deliver(bob, 'bob', ann, 'cat', 'before the upgrade');

    // a later svc ran on this home and moved cat's archive to a schema this one does not know
    await ann.daemon.close();
    const file = archiveOf(ann.home, 'cat');
    const later = new Database(file);
    later.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    later.close();
    const before = readFileSync(file);

    annDaemon = await startDaemon(ann.home, timing);
    const d = annDaemon;
    await connected(d, 'ann');

    // status (svc doctor, svc start) shows cat out of service: the code, the file, what to do
    const cat = (await d.client.status()).agents.find((a) => a.name === 'cat');
    expect(cat).toMatchObject({
      name: 'cat',
      agent_number: 'cat',
      session: 'unusable',
      unusable: {
        error: 'archive_unusable',
        file,
        message: expect.stringContaining(`The archive ${file} was written by a newer svc`),
        hint: expect.stringMatching(/^upgrade svc to a version that reads schema \d+, then restart the daemon/),
      },
    });
    expect(cat?.session_error).toBe(cat?.unusable?.message);
    expect((await d.client.listAgents()).map((a) => a.name)).toEqual(['ann', 'cat']);
    expect((await d.client.summary()).agents.map((a) => [a.name, a.session])).toEqual([
      ['ann', 'connected'],
      ['cat', 'unusable'],
    ]);
    // the status line a coding assistant shows
    const line = new RegExp(`^\\${ALL_AGENTS_KEY}\tsvc ann ● connected \\| cat ✕ unusable$`, 'm');
    await until(
      () => line.test(readFileSync(join(d.home, 'run', 'statusline'), 'utf8')),
      10_000,
      'the status line shows cat out of service',
    );

    // every command for cat says why, naming the file
    const refused = {
      code: 'archive_unusable',
      message: expect.stringContaining(`Agent cat is out of service: The archive ${file}`),
    };
    await expect(d.client.send('cat', { to: 'bob', content: 'hello' })).rejects.toMatchObject(refused);
    await expect(d.client.check('cat')).rejects.toMatchObject(refused);
    await expect(d.client.inbox('cat')).rejects.toMatchObject(refused);
    await expect(d.client.getAgent('cat')).rejects.toMatchObject(refused);
    // its name stays taken
    await expect(d.client.registerLocal({ name: 'cat' })).rejects.toMatchObject({ code: 'validation_failed' });

    // the other agent of the machine sends and receives as usual
    await deliver(d, 'ann', bob, 'bob', 'ann still works');
    await deliver(bob, 'bob', d, 'ann', 'and hears back');
    // a message for cat meanwhile waits on the relay: nobody takes it from there
    const waiting = await bob.client.send('bob', { to: 'cat', content: 'while you were out' });
    expect(waiting.status).toBe('accepted');

    // the file was not written to
    expect(readFileSync(file).equals(before)).toBe(true);

    // svc is upgraded (here: the archive is the schema this svc knows again) and the daemon restarted
    await d.daemon.close();
    annDaemon = undefined;
    const upgraded = new Database(file);
    upgraded.pragma(`user_version = ${MIGRATIONS.length}`);
    upgraded.close();
    annDaemon = await startDaemon(ann.home, timing);
    await connected(annDaemon, 'cat');
    const back = await until(
      async () => {
        const ids = (await annDaemon!.client.inbox('cat', { source: 'local' })).map((m) => m.message_id);
        return ids.includes(waiting.message_id) ? ids : undefined;
      },
      20_000,
      'cat receives the message that waited on the relay',
    );
    expect(back).toEqual(expect.arrayContaining([earlier.message_id, waiting.message_id]));
  });

  it('every agent of the daemon unusable: the daemon still starts and reports each (damaged files left as they were)', async () => {
    const home = await homeWithAgents('svc-daemon-test-', { duo: 'archive-damaged', solo: 'archive-damaged' });
    const files = ['duo', 'solo'].map((n) => archiveOf(home, n));
    const before = files.map((f) => readFileSync(f));

    const again = await startDaemon(home, timing);
    others.push(again);
    const status = await again.client.status();
    expect(status.agents).toEqual(
      ['duo', 'solo'].map((name, i) => ({
        name,
        agent_number: name,
        deployment: 'local',
        session: 'unusable',
        session_error: expect.any(String),
        kind: 'local',
        unusable: {
          error: 'archive_unusable',
          file: files[i],
          message: expect.stringMatching(
            new RegExp(`^The archive ${files[i]} is damaged \\(.+\\); it was not changed: `),
          ),
          hint: expect.stringMatching(
            /^restore it from a backup, or move it away .*; the next command for the agent, or svc agent list, finds it repaired/,
          ),
        },
      })),
    );
    await expect(again.client.send('solo', { to: 'duo', content: 'hi' })).rejects.toMatchObject({
      code: 'archive_unusable',
      message: expect.stringContaining(files[1]!),
    });
    // the daemon still does what needs no agent
    expect(await again.client.listDeployments()).toEqual([]);
    files.forEach((f, i) => {
      expect(readFileSync(f).equals(before[i]!)).toBe(true);
    });
  });
});

describe('deregistering an agent out of service', () => {
  it('whose archive is damaged: revokes it on its relay with its intact credentials and sets its directory aside', async () => {
    const { bob } = stage.daemons;
    const d = await startDaemon(undefined, timing);
    others.push(d);
    await d.client.fetchDeployment({ url: stage.url, trust_bundle: stage.bundle, name: 'dev' });
    await d.client.register({ enrollment_code: await stage.grant('fay'), name: 'fay' });
    await connected(d, 'fay');
    await deliver(bob, 'bob', d, 'fay', 'hello fay');
    await d.daemon.close();
    const damaged = Buffer.from('not a database, just some bytes '.repeat(200));
    writeFileSync(archiveOf(d.home, 'fay'), damaged);

    const again = await startDaemon(d.home, timing);
    others.push(again);
    expect((await again.client.status()).agents.find((a) => a.name === 'fay')?.session).toBe('unusable');
    await again.client.deregister('fay');
    // revoked on the relay: nobody can write to it any more
    await expect(bob.client.send('bob', { to: 'fay', content: 'still there?' })).rejects.toMatchObject({
      code: 'unknown_recipient',
    });
    // forgotten here, its files set aside as they were; the name is free again
    expect((await again.client.status()).agents.map((a) => a.name)).toEqual([]);
    expect(readFileSync(join(setAside(d.home, 'fay'), 'archive.db')).equals(damaged)).toBe(true);
    await again.client.registerLocal({ name: 'fay' });
    expect((await again.client.listAgents()).map((a) => a.name)).toEqual(['fay']);
  });

  it('whose agent.json is damaged: only --local removes it (refused otherwise, saying why); the name is free again', async () => {
    const home = await homeWithAgents('svc-daemon-test-', { gil: 'ok', hal: 'config-damaged' });
    const config = readFileSync(agentFile(home, 'hal', 'agent.json'));
    const again = await startDaemon(home, timing);
    others.push(again);
    await expect(again.client.deregister('hal')).rejects.toMatchObject({ code: 'config_invalid' });
    expect((await again.client.status()).agents.map((a) => [a.name, a.session])).toEqual([
      ['gil', 'offline'],
      ['hal', 'unusable'],
    ]);
    await again.client.deregister('hal', { revoke: false });
    expect((await again.client.status()).agents.map((a) => a.name)).toEqual(['gil']);
    expect(readFileSync(join(setAside(home, 'hal'), 'agent.json')).equals(config)).toBe(true);
    await again.client.registerLocal({ name: 'hal' });
    expect((await again.client.listAgents()).map((a) => a.name)).toEqual(['gil', 'hal']);
  });
});

describe("a name that is also another agent's number", () => {
  it('names the agent out of service, never the other agent whose number it is', async () => {
    const home = await homeWithAgents('svc-daemon-test-', { yy: 'ok', zeta: 'archive-damaged' });
    // yy's agent number is zeta (a relay gives agent numbers; nothing keeps them from names)
    const yyConfig = agentFile(home, 'yy', 'agent.json');
    writeFileSync(yyConfig, JSON.stringify({ ...JSON.parse(readFileSync(yyConfig, 'utf8')), agent_number: 'zeta' }));

    const again = await startDaemon(home, timing);
    others.push(again);
    await expect(again.client.getAgent('zeta')).rejects.toMatchObject({ code: 'archive_unusable' });
    expect((await again.client.listAgents()).map((a) => a.name)).toEqual(['yy', 'zeta']);
    // deregistering zeta gives up the agent of that name, not yy
    await again.client.deregister('zeta', { revoke: false });
    expect((await again.client.listAgents()).map((a) => a.name)).toEqual(['yy']);
    expect((await again.client.status()).agents.map((a) => a.name)).toEqual(['yy']);
    expect(readdirSync(setAside(home, 'zeta'))).toContain('archive.db');
  });
});

describe('an agent whose agent.json cannot be read', () => {
  it('damaged: the daemon starts, the other agent works, the agent is reported and refused, its name stays taken; restored, it is back', async () => {
    const { bob } = stage.daemons;
    const d = await startDaemon(undefined, timing);
    others.push(d);
    await d.client.fetchDeployment({ url: stage.url, trust_bundle: stage.bundle, name: 'dev' });
    for (const name of ['dan', 'eve']) {
      await d.client.register({ enrollment_code: await stage.grant(name), name });
      await connected(d, name);
    }
    await d.daemon.close();
    // cut short, as a full disk or a crash while another program wrote it could leave it
    const file = join(d.home, 'agents', 'eve', 'agent.json');
    const good = readFileSync(file);
    writeFileSync(file, good.subarray(0, 40));
    const before = readFileSync(file);

    const again = await startDaemon(d.home, timing);
    others.push(again);
    await connected(again, 'dan');

    // status (svc doctor, svc start) shows eve out of service: the code, the file, what to do
    const eve = (await again.client.status()).agents.find((a) => a.name === 'eve');
    expect(eve).toEqual({
      name: 'eve',
      session: 'unusable',
      session_error: eve?.unusable?.message,
      unusable: {
        error: 'config_invalid',
        file,
        message: expect.stringMatching(
          new RegExp(`^The agent config ${file} is damaged \\(.+\\); it was not changed: restore it from a backup`),
        ),
        hint: expect.stringMatching(
          /^restore it from a backup \(the next command for the agent, or svc agent list, finds it repaired \(no restart needed\)\); or give the agent up: svc deregister eve --local /,
        ),
      },
    });
    // agent list has only the agents it can describe: eve's facts are in the file it cannot read
    expect((await again.client.listAgents()).map((a) => a.name)).toEqual(['dan']);
    expect((await again.client.summary()).agents).toEqual([
      { name: 'dan', agent_number: 'dan', session: 'connected', unread: 0 },
      { name: 'eve', session: 'unusable', unread: 0 },
    ]);
    // the status line says so, with no row for a number it does not know
    const lines = `${ALL_AGENTS_KEY}\tsvc dan ● connected | eve ✕ unusable\ndan\tsvc dan ● connected\neve\tsvc eve ✕ unusable\n`;
    await until(
      () => readFileSync(join(again.home, 'run', 'statusline'), 'utf8') === lines,
      10_000,
      'the status line shows eve out of service',
    );

    // every command for eve says why, naming the file
    const refused = {
      code: 'config_invalid',
      message: expect.stringContaining(`Agent eve is out of service: The agent config ${file} is damaged`),
    };
    await expect(again.client.send('eve', { to: 'bob', content: 'hello' })).rejects.toMatchObject(refused);
    await expect(again.client.check('eve')).rejects.toMatchObject(refused);
    await expect(again.client.getAgent('eve')).rejects.toMatchObject(refused);
    // its relay is named in the file that cannot be read: it cannot be revoked from here
    await expect(again.client.deregister('eve')).rejects.toMatchObject({
      code: 'config_invalid',
      message: expect.stringMatching(
        /^Agent eve's agent\.json cannot be read, so it cannot be revoked from this machine: `svc deregister eve --local` forgets it here/,
      ),
    });
    // its name stays taken: no new agent of that name writes over the file
    await expect(again.client.registerLocal({ name: 'eve' })).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(
      again.client.register({ enrollment_code: await stage.grant('eve-again'), name: 'eve' }),
    ).rejects.toMatchObject({ code: 'validation_failed' });

    // the other agent of the machine sends and receives as usual
    await deliver(again, 'dan', bob, 'bob', 'dan still works');
    await deliver(bob, 'bob', again, 'dan', 'and hears back');
    const waiting = await bob.client.send('bob', { to: 'eve', content: 'while you were out' });
    expect(waiting.status).toBe('accepted');

    // the file was not written to
    expect(readFileSync(file).equals(before)).toBe(true);

    // restored from a backup, and the daemon restarted: eve is back, with what waited on the relay
    await again.daemon.close();
    writeFileSync(file, good);
    const restored = await startDaemon(d.home, timing);
    others.push(restored);
    await connected(restored, 'eve');
    await until(
      async () =>
        (await restored.client.inbox('eve', { source: 'local' })).some((m) => m.message_id === waiting.message_id),
      20_000,
      'eve receives the message that waited on the relay',
    );
  });
});

describe('sync of an identity with no agent routes', () => {
  it('a leaf uplink identity (nats-relay alone) counts zeros instead of failing with capability_required', async () => {
    const bob = stage.daemons.bob;
    await bob.client.register({
      enrollment_code: await stage.grant('edge1', ['--capability', 'nats-relay']),
      name: 'edge1',
    });
    expect(await bob.client.sync('edge1')).toEqual({
      agent: 'edge1',
      fetched: 0,
      archived: 0,
      rejected: 0,
      receipts: 0,
    });
  });
});
