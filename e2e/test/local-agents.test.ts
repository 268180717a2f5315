/**
 * `svc register --local` through the real `svc` CLI and its autostarted daemon, with no
 * relay and no deployment at all: two offline agents of one machine message each other
 * through the machine's nats-server (`svc start --local-only`), with the same signed and
 * sealed envelopes as relay agents.
 */
import type { ArchivedMessage, LocalAgent, LocalStackStatus, SentMessage } from '@svc/daemon/client';
import { freePort, signalIfAlive, tail, until } from '@svc/test-harness';
import { daemonLog, daemonPid, newHome, svc, svcJson } from '@svc/test-harness/svc-cli';
import { afterAll, describe, expect, it } from 'vitest';

const home = newHome('local');
let natsPid: number | undefined;
let daemon: number | undefined;

afterAll(async () => {
  await svc(home, ['--no-autostart', 'stop']).catch(() => undefined);
  for (const pid of [natsPid, daemon]) if (pid) signalIfAlive(pid, 'SIGKILL');
});

describe('svc register --local', () => {
  it('two offline agents talk through the local server, with no relay at all', async () => {
    try {
      const ann = await svcJson<LocalAgent>(home, ['register', '--local', '--name', 'ann', '--json']);
      expect(ann).toMatchObject({ name: 'ann', agent_number: 'ann', deployment: 'local', api_url: '' });
      await svcJson(home, ['register', '--local', '--name', 'ben', '--json']);
      daemon = daemonPid(home);

      // without the local server there is no way to reach ben
      const refused = await svc(home, ['send', '--as', 'ann', 'ben', 'too early', '--json']);
      expect(refused.code).not.toBe(0);
      expect(refused.stdout + refused.stderr).toContain('local_agent_unreachable');

      const stack = await svcJson<LocalStackStatus>(home, [
        'start',
        '--local-only',
        '--port',
        String(await freePort()),
        '--monitor-port',
        String(await freePort()),
        '--json',
      ]);
      natsPid = stack.pid;
      expect(stack).toMatchObject({ running: true, local_only: true });

      const hello = await svcJson<SentMessage>(home, [
        'send',
        '--as',
        'ann',
        'ben',
        'hello ben, no relay here',
        '--json',
      ]);
      expect(hello.status).toBe('accepted');
      const inbox = await svcJson<ArchivedMessage[]>(home, ['inbox', '--as', 'ben', '--json']);
      expect(inbox.map((m) => [m.message_id, m.from, m.content])).toEqual([
        [hello.message_id, 'ann', 'hello ben, no relay here'],
      ]);
      const back = await svcJson<SentMessage>(home, ['send', '--as', 'ben', 'ann', 'hello ann', '--json']);
      expect(
        (await svcJson<ArchivedMessage[]>(home, ['inbox', '--as', 'ann', '--json'])).map((m) => m.message_id),
      ).toEqual([back.message_id]);
      // ann's copy knows ben archived it (the local server's answer is the receipt)
      const thread = await svcJson<ArchivedMessage[]>(home, ['read', '--as', 'ann', 'ben', '--json']);
      expect(thread.find((m) => m.message_id === hello.message_id)?.delivered_at).not.toBeNull();

      // it went through the local server: the daemon verified and opened a real envelope
      await until(() => tail(daemonLog(home), 400).includes('"via":"local"'));
    } catch (err) {
      console.error(`daemon log:\n${tail(daemonLog(home), 80)}`);
      throw err;
    }
  }, 120_000);
});
