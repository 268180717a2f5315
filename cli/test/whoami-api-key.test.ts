/**
 * `svc whoami --api-url/--api-key` asks a real relay directly, without the daemon; either
 * half may come from `svc config set` (a key kept there stays off the command line), and
 * `svc doctor` checks the configured relay too.
 */
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeLink, statusWith, svc, withTempHome } from './helpers.js';

let relay: BusRelay;
let apiKey: string;

beforeAll(async () => {
  relay = await inProcessBusRelay();
  apiKey = (await relay.enroll('alice')).apiKey;
}, 60_000);

afterAll(() => relay?.close());

describe('whoami straight against the relay', () => {
  it('takes the half not given from the configuration', async () => {
    await withTempHome(async (home) => {
      const env = { SVC_HOME: home };
      const both = await svc(['whoami', '--api-url', relay.url, '--api-key', apiKey, '--json'], { env });
      expect(both.code, both.stderr).toBe(0);
      expect(JSON.parse(both.stdout)).toMatchObject({ agent_id: 'alice' });

      const none = await svc(['whoami', '--api-url', relay.url, '--json'], { env });
      expect(none.code).toBe(2);
      expect(JSON.parse(none.stdout).message).toBe(
        '--api-url and --api-key go together; give --api-key, or keep it with svc config set api-key VALUE.',
      );

      expect((await svc(['config', 'set', 'api-key', apiKey], { env })).code).toBe(0);
      const keyFromConfig = await svc(['whoami', '--api-url', relay.url, '--json'], { env });
      expect(keyFromConfig.code, keyFromConfig.stderr).toBe(0);
      expect(JSON.parse(keyFromConfig.stdout)).toMatchObject({ agent_id: 'alice' });

      expect((await svc(['config', 'set', 'api-url', relay.url], { env })).code).toBe(0);
      const urlFromConfig = await svc(['whoami', '--api-key', apiKey, '--json'], { env });
      expect(JSON.parse(urlFromConfig.stdout)).toMatchObject({ agent_id: 'alice' });
    });
  });

  it('svc doctor checks the relay of config api-url when --api-url is not given', async () => {
    await withTempHome(async (home) => {
      const env = { SVC_HOME: home, SVC_AGENT: '' };
      const { link, calls } = fakeLink({
        status: () => statusWith(),
        auditDeployments: () => [],
        archiveIntegrity: () => [],
        checkRelay: (url: unknown) => ({ url, checks: [] }),
      });
      await svc(['doctor', '--json'], { env, link });
      expect(calls.some((c) => c.method === 'checkRelay')).toBe(false);
      expect((await svc(['config', 'set', 'api-url', relay.url], { env })).code).toBe(0);
      await svc(['doctor', '--json'], { env, link });
      expect(calls.filter((c) => c.method === 'checkRelay').map((c) => c.args[0])).toEqual([relay.url]);
    });
  });
});
