/** POST /v1/dashboard on a real daemon: loopback only, a taken port refused, a fresh link per launch. */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { freePort } from '@svc/test-harness';
import { startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { signInDashboard } from '@svc/test-harness/dashboard-session';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard } from '../dashboard/build.mjs';

let d: TestDaemon;
let blocker: Server;
let takenPort = 0;

beforeAll(async () => {
  [d] = await Promise.all([startDaemon(), buildDashboard()]);
  blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  takenPort = (blocker.address() as { port: number }).port;
});
afterAll(async () => {
  blocker?.close();
  await d?.daemon.close();
});

describe('POST /v1/dashboard', () => {
  it.each(['0.0.0.0', '192.168.1.2', 'evil.example', '::'])('refuses the host %s', async (host) => {
    await expect(d.client.openDashboard({ host, port: 0 })).rejects.toMatchObject({
      code: 'dashboard_host_not_loopback',
      status: 400,
    });
  });

  it('answers a taken port with dashboard_port_in_use', async () => {
    await expect(d.client.openDashboard({ port: takenPort })).rejects.toMatchObject({
      code: 'dashboard_port_in_use',
      status: 409,
    });
  });

  it('serves once and mints a new one-time link per launch', async () => {
    const one = await d.client.openDashboard({ port: 0 });
    const two = await d.client.openDashboard({ port: one.port });
    expect(two.base_url).toBe(one.base_url);
    expect(two.url).not.toBe(one.url);
    const res = await fetch(`${one.base_url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    // the page without a session gets nothing from the API
    expect((await fetch(`${one.base_url}/api/v1/agents`)).status).toBe(401);
  });

  it('the session cookie alone opens nothing: a browser sends it to every port of the host, the page key it does not', async () => {
    const launch = await d.client.openDashboard({ port: 0 });
    const mine = await signInDashboard(launch.url);
    const other = await signInDashboard((await d.client.openDashboard({ port: launch.port })).url);
    // per port: another daemon's dashboard on this host keeps its own cookie
    expect(mine.cookie).toMatch(new RegExp(`^svc_dashboard_${launch.port}=[A-Za-z0-9_-]{43}$`));
    const status = (headers: Record<string, string>) =>
      fetch(`${launch.base_url}/api/v1/status`, { headers }).then((r) => r.status);
    expect(await status(mine.headers)).toBe(200);
    // what a program on another loopback port that the browser visits gets: the cookie (it
    // read the whole inbox and sent as the agent with it)
    expect(await status({ cookie: mine.cookie })).toBe(401);
    expect(await status({ cookie: mine.cookie, 'x-svc-page-key': 'x'.repeat(43) })).toBe(401);
    expect(await status({ cookie: mine.cookie, 'x-svc-page-key': other.pageKey })).toBe(401);
    const events = (url: string, cookie: string) => fetch(url, { headers: { cookie } }).then((r) => r.status);
    expect(await events(`${launch.base_url}/api/events`, mine.cookie)).toBe(401);
    expect(await events(`${launch.base_url}/api/events?key=${other.pageKey}`, mine.cookie)).toBe(401);
  });

  it('moves to another port while a page holds its event stream open (it hung, and every launch after it)', async () => {
    const first = await d.client.openDashboard({ port: 0 });
    const { cookie, pageKey } = await signInDashboard(first.url);
    const events = await fetch(`${first.base_url}/api/events?key=${pageKey}`, { headers: { cookie } });
    const reader = events.body!.getReader();
    await reader.read(); // open
    const moved = await d.client.openDashboard({ port: await freePort() });
    expect(moved.port).not.toBe(first.port);
    // the old page's stream ended with its server; the next launch answers too
    let done = false;
    while (!done) done = (await reader.read().catch(() => ({ done: true }))).done;
    expect((await d.client.openDashboard({ port: moved.port })).base_url).toBe(moved.base_url);
  });

  it('never forwards a send that names a file on disk', async () => {
    const launch = await d.client.openDashboard({ port: 0 });
    const { headers } = await signInDashboard(launch.url);
    const send = (body: object) =>
      fetch(`${launch.base_url}/api/v1/agents/nobody/send`, {
        method: 'POST',
        headers: { ...headers, origin: launch.base_url, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const refused = await send({ to: 'mallory', content: '', file_path: join(d.home, 'vault.json') });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      error: 'dashboard_forbidden',
      message: expect.stringMatching(/file/),
    });
    // the same send without the path reaches the daemon (which has no such agent)
    const forwarded = await send({ to: 'mallory', content: 'hi' });
    expect(forwarded.status).toBe(404);
    expect(await forwarded.json()).toMatchObject({ error: 'unknown_agent' });
  });

  it('takes agent numbers and conversation ids as long as the schemas allow, on the socket and through the page', async () => {
    const long = 'x'.repeat(128);
    // a group id of a creator with the longest number: grp:<128>:<64>
    const group = `grp:${long}:${'r'.repeat(64)}`;
    await expect(d.client.keys(long)).rejects.toMatchObject({ code: 'unknown_agent', status: 404 });
    const launch = await d.client.openDashboard({ port: 0 });
    const { headers } = await signInDashboard(launch.url);
    for (const path of [
      `/api/v1/agents/${long}/keys`,
      `/api/v1/agents/${long}/conversations/${encodeURIComponent(group)}/messages?last=200`,
    ]) {
      const res = await fetch(`${launch.base_url}${path}`, { headers });
      expect(res.status, path).toBe(404);
      expect(await res.json()).toMatchObject({ error: 'unknown_agent' });
    }
  });

  it('never logs a launch token or a session id', async () => {
    const launch = await d.client.openDashboard({ port: 0 });
    const token = new URL(launch.url).searchParams.get('token')!;
    const { session, pageKey, headers } = await signInDashboard(launch.url);
    expect(session).toHaveLength(43);
    expect((await fetch(`${launch.base_url}/api/v1/status`, { headers })).status).toBe(200);
    // the event stream takes its page key as a parameter
    const events = await fetch(`${launch.base_url}/api/events?key=${pageKey}`, { headers: { cookie: headers.cookie } });
    expect(events.status).toBe(200);
    await events.body?.cancel();
    await fetch(`${launch.base_url}/auth?token=${token}`); // a replay, refused
    await d.daemon.close(); // flushes the log
    const log = readFileSync(join(d.home, 'logs', 'daemon.log'), 'utf8');
    expect(log).toContain('dashboard request');
    expect(log).not.toContain(token);
    expect(log).not.toContain(session);
    expect(log).not.toContain(pageKey);
  });
});
