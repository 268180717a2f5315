/**
 * An agent out of service comes back once its file is repaired, without a daemon restart:
 * the next command for it (or status) looks at the file again (at most every RECHECK_MS),
 * starts its session and answers as usual. A file still unusable stays out of service and
 * is not written to. Real daemons on local agents.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { until } from '@svc/test-harness';
import { agentFile, homeWithAgents, startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { afterEach, expect, it } from 'vitest';

let d: TestDaemon | undefined;

afterEach(async () => {
  await d?.daemon.close();
  d = undefined;
});

const sessionOf = async (name: string) => (await d!.client.status()).agents.find((a) => a.name === name)?.session;

it('a damaged archive moved away: the agent is back in service with a new, empty archive', async () => {
  const home = await homeWithAgents('svc-repaired-', { ann: 'ok', zed: 'archive-damaged' });
  const archive = agentFile(home, 'zed', 'archive.db');
  d = await startDaemon(home);
  expect(await sessionOf('zed')).toBe('unusable');
  await expect(d.client.send('zed', { to: 'ann', content: 'hi' })).rejects.toMatchObject({ code: 'archive_unusable' });
  // looked at again meanwhile, and still damaged: left as it was
  const damaged = readFileSync(archive);
  await new Promise((r) => setTimeout(r, 2_100));
  await expect(d.client.inbox('zed')).rejects.toMatchObject({ code: 'archive_unusable' });
  expect(readFileSync(archive).equals(damaged)).toBe(true);

  renameSync(archive, `${archive}.damaged`);
  await until(async () => (await sessionOf('zed')) !== 'unusable', 10_000, 'zed back in service');
  // its commands answer again, from the new archive
  expect(await d.client.inbox('zed', { source: 'local' })).toEqual([]);
  expect((await d.client.getAgent('zed')).agent_number).toBe('zed');
  expect((await d.client.status()).agents.every((a) => a.unusable === undefined)).toBe(true);
}, 60_000);

it('an agent.json restored from a backup: the agent is back under its own number', async () => {
  const home = await homeWithAgents('svc-repaired-', { ann: 'ok', yan: 'ok' });
  const config = agentFile(home, 'yan', 'agent.json');
  const backup = readFileSync(config, 'utf8');
  writeFileSync(config, '{"name": "yan", "agent_');
  d = await startDaemon(home);
  await expect(d.client.getAgent('yan')).rejects.toMatchObject({ code: 'config_invalid' });

  writeFileSync(config, backup);
  await until(async () => (await sessionOf('yan')) !== 'unusable', 10_000, 'yan back in service');
  expect((await d.client.getAgent('yan')).agent_number).toBe(JSON.parse(backup).agent_number);
}, 60_000);
