/**
 * One relay at a time on a data dir whose nats-server it runs (real processes): a second
 * `serve` or `dev` is refused with data_dir_in_use before it touches anything, and the
 * running relay keeps its nats-server and stays ready; a relay killed with SIGKILL leaves
 * a lock (and a nats-server) that the next start takes over.
 */
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { running, tail, until } from '@svc/test-harness';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Bus } from '../src/bus/index.js';

const started: RelayProcess[] = [];
afterAll(async () => {
  await Promise.all(started.map((r) => r.stop()));
});

const lockFile = (r: RelayProcess) => join(r.dataDir, 'relay.lock');
const readyz = async (r: RelayProcess) => (await fetch(`${r.url}/readyz`)).status;
/** What a second relay must not rewrite: the nats-server's config and pid file, the deployment document. */
const files = (r: RelayProcess) =>
  ['nats/nats-server.conf', 'nats/nats-server.pid', 'deployment/document.jws'].map((f) => {
    const path = join(r.dataDir, f);
    return existsSync(path) ? readFileSync(path, 'utf8') : `${f} missing`;
  });

describe('a second relay on a data dir in use', () => {
  it('is refused with data_dir_in_use naming the running relay, which keeps its nats-server and stays ready', async () => {
    const first = await spawnRelay();
    started.push(first);
    const natsPid = first.natsPid();
    const before = files(first);

    // the same settings (its port too, as a second `serve` in the same place would have), then dev
    for (const command of ['serve', 'dev']) {
      const second = await runRelayCli([command], first.env, { timeoutMs: 30_000 });
      const lines = second.stderr.trim().split('\n');
      expect(second.code, second.stderr).not.toBe(0);
      expect(lines, second.stderr).toHaveLength(1);
      expect(lines[0]).toContain('(data_dir_in_use)');
      expect(lines[0]).toContain(`pid ${first.child.pid}`);
    }

    // the bus on its own (no relay around it) refuses that nats-server too, writing nothing
    const log: string[] = [];
    await expect(
      Bus.start({
        dataDir: first.dataDir,
        tenants: ['default'],
        logger: pino({ level: 'debug' }, { write: (l: string) => void log.push(l) }),
      }),
    ).rejects.toMatchObject({ code: 'data_dir_in_use', message: expect.stringContaining(`pid ${first.child.pid}`) });

    // a lost nats-server would show by now: the relay restarts it on the config it wrote
    await new Promise((r) => setTimeout(r, 1000));
    expect(running(natsPid)).toBe(true);
    expect(first.natsPid()).toBe(natsPid);
    expect(files(first)).toEqual(before);
    expect(await readyz(first), tail(first.logFile)).toBe(200);
    expect(readFileSync(first.logFile, 'utf8')).not.toContain('nats-server exited unexpectedly');
    expect(JSON.parse(readFileSync(lockFile(first), 'utf8'))).toMatchObject({ pid: first.child.pid });
  }, 90_000);
});

describe('a relay killed with SIGKILL', () => {
  it('leaves a stale lock and a nats-server that the next start on the data dir takes over', async () => {
    const killed = await spawnRelay();
    const leftover = killed.natsPid();
    // not killed.stop('SIGKILL'): that reaps the nats-server, which is the next relay's job here
    killed.child.kill('SIGKILL');
    await once(killed.child, 'exit');
    expect(JSON.parse(readFileSync(lockFile(killed), 'utf8'))).toMatchObject({ pid: killed.child.pid });
    expect(running(leftover)).toBe(true);

    const next = await spawnRelay({ dataDir: killed.dataDir, init: false });
    started.push(next);
    expect(await readyz(next)).toBe(200);
    expect(JSON.parse(readFileSync(lockFile(next), 'utf8'))).toMatchObject({ pid: next.child.pid });
    await until(() => !running(leftover), 10_000, 'the leftover nats-server to stop');
    expect(next.natsPid()).not.toBe(leftover);
    expect(readFileSync(next.logFile, 'utf8')).toContain('left over from an earlier run');

    // stopped cleanly, it releases the data dir
    expect(await next.stop()).toBe(0);
    expect(existsSync(lockFile(next))).toBe(false);
  }, 90_000);
});

describe('a relay whose log output goes away', () => {
  it('stops as on SIGTERM, with exit status 1: its nats-server stopped, the data dir released', async () => {
    const relay = await spawnRelay();
    const nats = relay.natsPid();
    const exited = new Promise<number | null>((resolve) => relay.child.once('exit', (code) => resolve(code)));
    // the reader of its stderr exits (`svc-relay serve 2>&1 | head`, a log shipper that died)
    relay.child.stderr?.unpipe();
    relay.child.stderr?.destroy();
    // its next log line (a request's) meets the closed pipe; it died of it, with nothing cleaned up
    await fetch(`${relay.url}/healthz`).catch(() => undefined);
    expect(await exited).toBe(1);
    expect(relay.child.signalCode).toBeNull();
    await until(() => !running(nats), 10_000, 'its nats-server to stop');
    expect(existsSync(lockFile(relay))).toBe(false);
  }, 90_000);
});
