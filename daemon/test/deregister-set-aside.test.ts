/**
 * Deregistration sets the agent's directory aside (a rename under agents/). When that rename
 * fails, the agent stays as it was (its session running again, its secrets in the vault), the
 * answer says so with a code and what to do, and doing that finishes the job. The failure is
 * real: agents/ is made immutable (chattr +i; root on a file system that has the flag),
 * so not even root can rename in it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { afterAll, beforeAll, expect, it } from 'vitest';

const chattr = (flag: '+i' | '-i', dir: string) => spawnSync('chattr', [flag, dir], { encoding: 'utf8' });

/** Whether directories can be made immutable here; why not, otherwise. */
function immutableUnavailable(): string | undefined {
  const probe = tempDir('svc-chattr-probe-');
  mkdirSync(join(probe, 'd'));
  const set = chattr('+i', join(probe, 'd'));
  if (set.error || set.status !== 0)
    return `chattr +i is not possible here (${set.error?.message ?? set.stderr.trim()})`;
  chattr('-i', join(probe, 'd'));
  return undefined;
}
const unavailable = immutableUnavailable();

const timing = { outboxRetryMinMs: 50, outboxRetryMaxMs: 200, heartbeatMs: 200 };
let stage: DaemonsOnRelay<'ivy'> | undefined;
const locked: string[] = [];

beforeAll(async () => {
  if (!unavailable) stage = await startDaemonsOnRelay({ agents: ['ivy'], daemon: timing });
}, 120_000);

afterAll(async () => {
  for (const dir of locked) chattr('-i', dir);
  await stage?.close();
});

it.skipIf(unavailable)(
  `a directory that cannot be set aside leaves the agent registered and says what to do; done, deregistering again finishes${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  async () => {
    const d = (stage as DaemonsOnRelay<'ivy'>).daemons.ivy;
    await d.client.registerLocal({ name: 'jo' });
    const agents = join(d.home, 'agents');
    locked.push(agents);
    expect(chattr('+i', agents).status).toBe(0);

    // a local agent: nothing to revoke; it stays, session and secrets as they were
    await expect(d.client.deregister('jo')).rejects.toMatchObject({
      code: 'home_not_writable',
      message: expect.stringMatching(
        /^Agent jo's directory \S+\/agents\/jo cannot be set aside \(.*\): the agent stays registered here\. Make that directory and its parent writable \(or free the disk\), then run `svc deregister jo` again\.$/,
      ),
    });
    // the relay's agent: revoked there first, so the next step is --local
    await expect(d.client.deregister('ivy')).rejects.toMatchObject({
      code: 'home_not_writable',
      message: expect.stringMatching(
        /: the agent stays registered here, though its relay has revoked it\. .* then run `svc deregister ivy --local` again\.$/,
      ),
    });
    expect((await d.client.listAgents()).map((a) => a.name)).toEqual(['ivy', 'jo']);
    // jo's session runs again (its archive, closed for the move, is open again)
    expect((await d.client.status()).agents.find((a) => a.name === 'jo')?.session).not.toBe('unusable');
    expect(await d.client.inbox('jo', { source: 'local' })).toEqual([]);

    expect(chattr('-i', agents).status).toBe(0);
    await d.client.deregister('jo');
    await d.client.deregister('ivy', { revoke: false });
    expect(await d.client.listAgents()).toEqual([]);
    expect(readdirSync(agents).filter((n) => n.startsWith('.deregistered-')).length).toBe(2);
  },
);
