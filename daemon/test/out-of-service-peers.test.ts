/**
 * An agent out of service (its archive or agent.json cannot be used) as the one another
 * part of the daemon needs: the recipient of a local agent's message, and the machine's
 * nats-relay identity that `svc start --port …` makes the uplink with. Each is answered
 * with that agent's code and its message naming the file, not "no such agent" or "register
 * one" (which would spend an enrollment grant on an identity that only needs its file).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { freePort } from '@svc/test-harness';
import { startDaemon, type TestDaemon, tempHome } from '@svc/test-harness/daemon';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const running: TestDaemon[] = [];
afterAll(async () => {
  await Promise.all(running.map((d) => d.daemon.close()));
});

const archiveOf = (home: string, agent: string) => join(home, 'agents', agent, 'archive.db');
const configOf = (home: string, agent: string) => join(home, 'agents', agent, 'agent.json');
const damage = (file: string) => writeFileSync(file, 'not a database, just some bytes '.repeat(200));

async function restart(home: string): Promise<TestDaemon> {
  const d = await startDaemon(home);
  running.push(d);
  return d;
}

describe('a local agent sends to a local agent that is out of service', () => {
  let d: TestDaemon;
  let home: string;
  let fromBob: string;
  const localOnly = (port: number, monitor_port: number) => ({
    local_only: true,
    port,
    monitor_port,
    listen: '127.0.0.1',
  });

  beforeAll(async () => {
    home = tempHome('svc-daemon-oos-local-');
    const first = await startDaemon(home);
    try {
      for (const name of ['ann', 'bob', 'cat']) await first.client.registerLocal({ name });
      // bob writes to ann while he can: ann has a message of his to reply to
      await first.client.localStack('start', localOnly(await freePort(), await freePort()));
      fromBob = (await first.client.send('bob', { to: 'ann', content: 'hi ann' })).message_id;
    } finally {
      await first.daemon.close();
    }
    damage(archiveOf(home, 'bob'));
    writeFileSync(configOf(home, 'cat'), '{"name": "cat", "agent_');
    d = await restart(home);
    await d.client.localStack('start', localOnly(await freePort(), await freePort()));
  }, 30_000);

  it("is told the recipient's code and message, naming the file, not that it is no local agent", async () => {
    await expect(d.client.send('ann', { to: 'bob', content: 'hello' })).rejects.toMatchObject({
      code: 'archive_unusable',
      message: expect.stringContaining(
        `The recipient bob is out of service on this machine: The archive ${archiveOf(home, 'bob')} is damaged`,
      ),
    });
    await expect(d.client.send('ann', { to: 'cat', content: 'hello' })).rejects.toMatchObject({
      code: 'config_invalid',
      message: expect.stringContaining(
        `The recipient cat is out of service on this machine: The agent config ${configOf(home, 'cat')} is damaged`,
      ),
    });
    // a reply to him, the same
    await expect(d.client.reply('ann', { message_id: fromBob, content: 'hello back' })).rejects.toMatchObject({
      code: 'archive_unusable',
      message: expect.stringContaining(`The recipient bob is out of service on this machine: The archive`),
    });
    // an agent this machine does not have is still that
    await expect(d.client.send('ann', { to: 'dan', content: 'hello' })).rejects.toMatchObject({
      code: 'local_agent_unreachable',
    });
    // nothing was archived as sent: ann has bob's message only
    expect((await d.client.inbox('ann', { source: 'local' })).map((m) => m.message_id)).toEqual([fromBob]);
  });

  it('the local delivery subject answers the same for an envelope addressed to it', async () => {
    // the daemon's own client token, from the server's config (0600, this home's only)
    const conf = readFileSync(join(home, 'run', 'local-stack', 'nats-server.conf'), 'utf8');
    const token = /token: "([^"]+)"/.exec(conf)?.[1];
    const status = await d.client.localStack('status');
    const nc = await connect({ servers: status.url as string, token });
    try {
      const item = {
        message_id: '0190a0b0-0000-7000-8000-000000000001',
        sender: 'ann',
        envelope: { header: { recipient: 'bob', deployment_id: 'local', tenant_id: 'local' } },
      };
      const answer = (await nc.request('svc.local.deliver', JSON.stringify(item), { timeout: 10_000 })).json();
      expect(answer).toEqual({
        error: 'archive_unusable',
        message: expect.stringContaining(
          `The recipient bob is out of service on this machine: The archive ${archiveOf(home, 'bob')}`,
        ),
      });
    } finally {
      await nc.close();
    }
  });
});

describe("the machine's nats-relay identity is out of service", () => {
  let stage: DaemonsOnRelay<never>;
  let home: string;

  beforeAll(async () => {
    stage = await startDaemonsOnRelay({ agents: [] });
    home = tempHome('svc-daemon-oos-uplink-');
    const first = await startDaemon(home);
    try {
      await first.client.fetchDeployment({ url: stage.url, trust_bundle: stage.bundle, name: 'dev' });
      await first.client.register({
        enrollment_code: await stage.grant('edge-m', ['--capability', 'nats-relay']),
        name: 'edge-m',
      });
    } finally {
      await first.daemon.close();
    }
  }, 120_000);

  afterAll(() => stage?.close());

  const start = async (d: TestDaemon) =>
    d.client.localStack('start', {
      local_only: false,
      port: await freePort(),
      monitor_port: await freePort(),
      listen: '127.0.0.1',
    });

  it('svc start --port … answers with its code and message, not uplink_identity_required', async () => {
    const file = archiveOf(home, 'edge-m');
    const good = readFileSync(file);
    damage(file);
    const d = await restart(home);
    await expect(start(d)).rejects.toMatchObject({
      code: 'archive_unusable',
      message: expect.stringMatching(
        new RegExp(
          `^Agent edge-m is out of service: The archive ${file} is damaged .*; the next command for the agent, or svc agent list, finds it repaired`,
        ),
      ),
    });
    expect((await d.client.localStack('status')).running).toBe(false);
    await d.daemon.close();
    writeFileSync(file, good);

    // its agent.json cannot be read: whether it holds nats-relay is in that file, so it may be the one
    const config = configOf(home, 'edge-m');
    writeFileSync(config, '{"name": "edge-m", "agent_');
    const again = await restart(home);
    await expect(start(again)).rejects.toMatchObject({
      code: 'config_invalid',
      message: expect.stringMatching(
        new RegExp(
          `^Agent edge-m is out of service: The agent config ${config} is damaged .* Its agent.json cannot be read, so it may be the nats-relay identity; if it was not, register one`,
        ),
      ),
    });
  });
});
