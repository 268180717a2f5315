/**
 * `svc watch` against a real daemon that stops under it: the end of its event stream is
 * not the end of watching a script can take for success. The agent is stored locally with
 * an unreachable relay (its session just keeps connecting), which is all watch needs.
 */
import { rm } from 'node:fs/promises';
import { DaemonClient } from '@svc/daemon/client';
import { startDaemon, type TestDaemon, tempHome } from '@svc/test-harness/daemon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { svc, writeAgentFile } from './helpers.js';

let d: TestDaemon | undefined;
let home: string;

beforeAll(async () => {
  home = tempHome('svc-cli-gone-');
  writeAgentFile(home);
  d = await startDaemon(home);
}, 30_000);

afterAll(async () => {
  await d?.daemon.close();
  await rm(home, { recursive: true, force: true });
});

describe('svc watch when the daemon stops', () => {
  it('--json: exits 1 with daemon_unavailable as its last line, not 0 as if it had been interrupted', async () => {
    const daemon = d!;
    // the real client of the real daemon; only told apart to know when watch has subscribed
    const client = new DaemonClient({ home: daemon.home });
    let subscribed!: () => void;
    const watching = new Promise<void>((resolve) => {
      subscribed = resolve;
    });
    const events = client.events.bind(client);
    client.events = async (options) => {
      const stream = await events(options);
      subscribed();
      return stream;
    };
    const exit = svc(['watch', '--as', 'alice', '--json'], {
      env: { SVC_HOME: daemon.home, SVC_AGENT: '' },
      // never aborted: nothing but the daemon ends this watch
      signal: new AbortController().signal,
      link: client,
    });
    await watching;
    await daemon.daemon.close();
    d = undefined;
    const { code, stdout, stderr } = await exit;
    expect(code).toBe(1);
    const lines = stdout.trimEnd().split('\n');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ error: 'daemon_unavailable' });
    expect(stderr).toMatch(/^svc: error: The svc daemon stopped.* \(daemon_unavailable\)\n$/);
  });
});
