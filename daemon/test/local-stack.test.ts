/**
 * `svc start --local-only` through a real daemon: the daemon starts its nats-server child
 * on the asked ports, answers the same start again as done, refuses one with other
 * settings, stops it on request, and stops it when the daemon itself closes.
 */

import { freePort, processAlive, until } from '@svc/test-harness';
import { startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { afterAll, describe, expect, it } from 'vitest';

const running: TestDaemon[] = [];
afterAll(async () => {
  await Promise.all(running.map((d) => d.daemon.close()));
});

describe('the daemon supervises the local nats-server', () => {
  it('starts it local-only, refuses a start with other settings, stops it on request and when the daemon closes', async () => {
    const d = await startDaemon();
    running.push(d);
    const input = { local_only: true, port: await freePort(), monitor_port: await freePort(), listen: '127.0.0.1' };
    const status = await d.client.localStack('start', input);
    expect(status).toMatchObject({ running: true, local_only: true, url: `nats://127.0.0.1:${input.port}` });
    const varz = await fetch(`http://127.0.0.1:${input.monitor_port}/varz`);
    expect(varz.status).toBe(200);
    // the same start again is done already; other settings need a stop first
    expect(await d.client.localStack('start', input)).toMatchObject({ ...status, already_running: true });
    for (const other of [{ port: await freePort() }, { monitor_port: await freePort() }, { listen: '::1' }]) {
      await expect(d.client.localStack('start', { ...input, ...other })).rejects.toMatchObject({
        code: 'local_stack_running',
      });
    }
    await expect(d.client.localStack('start', { ...input, local_only: false })).rejects.toMatchObject({
      code: 'local_stack_running',
    });
    expect(await d.client.localStack('stop')).toEqual({ stopped: true });
    await until(() => !processAlive(status.pid as number));
    expect(processAlive(status.pid as number)).toBe(false);
    expect(await d.client.localStack('status')).toEqual({ running: false });

    const again = await d.client.localStack('start', input);
    await d.daemon.close();
    await until(() => !processAlive(again.pid as number));
    expect(processAlive(again.pid as number)).toBe(false);
  }, 30_000);

  it('the leaf uplink needs a local nats-relay identity: without one, start without local_only is refused', async () => {
    const d = await startDaemon();
    running.push(d);
    await expect(
      d.client.localStack('start', { local_only: false, port: 1, monitor_port: 2, listen: '127.0.0.1' }),
    ).rejects.toMatchObject({ code: 'uplink_identity_required' });
  });

  it('a listen address that is no address is said so (nats-server failed on it, read as a port taken)', async () => {
    const d = await startDaemon();
    running.push(d);
    for (const listen of ['bad host', '-x', 'a;b']) {
      await expect(
        d.client.localStack('start', { local_only: true, port: 1, monitor_port: 2, listen }),
        listen,
      ).rejects.toMatchObject({
        code: 'validation_failed',
        message: `The listen address ${JSON.stringify(listen)} is not an IP address or a host name (say 127.0.0.1).`,
      });
    }
    expect((await d.client.localStack('status')).running).toBe(false);
  });
});
