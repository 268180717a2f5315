import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type Account, decode } from '@nats-io/jwt';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bus } from './index.js';
import { busRoot, natsLayout, tenantFiles } from './layout.js';
import { connectWithCreds, lookupAccountJwt } from './system-client.js';

const logLines: string[] = [];
const logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
const dirs: string[] = [];
const opened: NatsConnection[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bus-'));
  dirs.push(dir);
  return dir;
}

/** A client connection as an agent would open it: no reconnect, so being cut off is final. */
async function userConnect(url: string, creds: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: url,
    authenticator: credsAuthenticator(new TextEncoder().encode(creds)),
    reconnect: false,
    timeout: 2000,
  });
  opened.push(nc);
  return nc;
}

function collect(nc: NatsConnection, subject: string): string[] {
  const got: string[] = [];
  nc.subscribe(subject, {
    callback: (_err, msg) => {
      got.push(msg.string());
    },
  });
  return got;
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`timed out: ${what}`)), ms))]);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

afterAll(async () => {
  await Promise.allSettled(opened.map((nc) => nc.close()));
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('Bus, managed nats-server', () => {
  let bus: Bus;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await tempDir();
    bus = await Bus.start({ dataDir, tenants: ['A', 'B'], logger });
  });
  afterAll(async () => {
    await bus?.close();
  });

  it("logs the nats-server's pid as nats_pid: the relay's own pid survives JSON parsing", () => {
    const started = logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'bus: nats-server started');
    expect(started).toMatchObject({ pid: process.pid, nats_pid: bus.managedPid });
    expect(logLines.filter((l) => (l.match(/"pid":/g) ?? []).length > 1)).toEqual([]);
  });

  it('isolates tenants: core subjects and JetStream data of A are invisible to B', async () => {
    const a = await userConnect(bus.clientUrl, (await bus.mintUserCreds('A', { name: 'agent-a' })).creds);
    const b = await userConnect(bus.clientUrl, (await bus.mintUserCreds('B', { name: 'agent-b' })).creds);
    const seenByA = collect(a, 'msg.x');
    const seenByB = collect(b, 'msg.x');
    await Promise.all([a.flush(), b.flush()]);
    a.publish('msg.x', 'from-a');
    b.publish('msg.x', 'from-b');
    await Promise.all([a.flush(), b.flush()]);
    await new Promise((r) => setTimeout(r, 150));
    expect(seenByA).toEqual(['from-a']);
    expect(seenByB).toEqual(['from-b']);

    // Each tenant's SVC_MSGS holds only its own envelopes.
    await jetstream(await bus.tenantConnection('A')).publish('msg.1', 'a-data', { msgID: 'a-1' });
    const jsB = jetstream(await bus.tenantConnection('B'));
    await jsB.publish('msg.1', 'b-data-1', { msgID: 'b-1' });
    await jsB.publish('msg.1', 'b-data-2', { msgID: 'b-2' });

    // msg.x above was captured by the tenant's own SVC_MSGS (subjects msg.*) too.
    const jsmA = await jetstreamManager(a);
    expect((await jsmA.streams.info('SVC_MSGS')).state.messages).toBe(2);
    expect((await jsmA.streams.getMessage('SVC_MSGS', { seq: 1 }))?.string()).toBe('from-a');
    expect((await jsmA.streams.getMessage('SVC_MSGS', { seq: 2 }))?.string()).toBe('a-data');
    expect(await jsmA.streams.getMessage('SVC_MSGS', { seq: 3 })).toBeNull();
    const namesA: string[] = [];
    for await (const name of jsmA.streams.names()) namesA.push(name);
    expect(namesA.sort()).toEqual(['SVC_ACKS', 'SVC_MSGS']);

    const jsmB = await jetstreamManager(b);
    expect((await jsmB.streams.info('SVC_MSGS')).state.messages).toBe(3);
    const seqsB: string[] = [];
    for (const seq of [1, 2, 3]) seqsB.push((await jsmB.streams.getMessage('SVC_MSGS', { seq }))?.string() ?? '');
    expect(seqsB).toEqual(['from-b', 'b-data-1', 'b-data-2']);
  });

  it('adds a tenant at run time without restarting the server', async () => {
    const pid = bus.managedPid;
    expect(pid).toBeGreaterThan(0);
    await bus.ensureTenant('C');
    await bus.ensureTenant('C'); // idempotent
    const c = await userConnect(bus.clientUrl, (await bus.mintUserCreds('C', { name: 'agent-c' })).creds);
    const ack = await jetstream(c).publish('msg.7', 'hello-c', { msgID: 'c-1' });
    expect(ack.stream).toBe('SVC_MSGS');
    expect(ack.seq).toBe(1);
    // The dedupe window drops a repeated message id.
    expect((await jetstream(c).publish('msg.7', 'hello-c', { msgID: 'c-1' })).duplicate).toBe(true);
    expect(bus.managedPid).toBe(pid);
  });

  it('revokeUsers cuts off a connected user and its creds stop working; others stay', async () => {
    const victim = await bus.mintUserCreds('A', { name: 'victim' });
    const bystander = await bus.mintUserCreds('A', { name: 'bystander' });
    const v = await userConnect(bus.clientUrl, victim.creds);
    const by = await userConnect(bus.clientUrl, bystander.creds);
    await v.flush();

    await bus.revokeUsers('A', [victim.publicKey]);
    await within(v.closed(), 5000, 'revoked connection closed');
    expect(v.isClosed()).toBe(true);
    await expect(userConnect(bus.clientUrl, victim.creds)).rejects.toThrow(/authoriz/i);

    await by.flush();
    expect(by.isClosed()).toBe(false);
    await (await bus.tenantConnection('A')).flush();
  });

  it('caps consumers at 1024: stream max_consumers and the account JWT consumer limit', async () => {
    const jsm = await jetstreamManager(await bus.tenantConnection('B'));
    for (const name of ['SVC_MSGS', 'SVC_ACKS']) {
      const cfg = (await jsm.streams.info(name)).config;
      expect(cfg.max_consumers).toBe(1024);
      expect(cfg.storage).toBe('file');
      expect(cfg.retention).toBe('limits');
      expect(cfg.max_age).toBe(30 * 24 * 3600 * 1e9);
      expect(cfg.duplicate_window).toBe(120 * 1e9);
    }
    expect((await jsm.streams.info('SVC_MSGS')).config.subjects).toEqual(['msg.*']);
    expect((await jsm.streams.info('SVC_ACKS')).config.subjects).toEqual(['ack.*']);
    expect((await jsm.getAccountInfo()).limits.max_consumers).toBe(1024);

    // The JWT the server actually holds sets every limit, none left to a denying 0.
    const layout = natsLayout(busRoot(dataDir));
    const sys = await connectWithCreds(bus.clientUrl, await readFile(layout.systemCredsFile, 'utf8'), 'test-sys');
    opened.push(sys);
    const accountPub = (await readFile(tenantFiles(layout, 'B').accountSeedFile, 'utf8')).trim();
    const { fromSeed } = await import('@nats-io/nkeys');
    const pub = fromSeed(new TextEncoder().encode(accountPub)).getPublicKey();
    const jwt = await lookupAccountJwt(sys, pub, 2000);
    expect(jwt).toBeDefined();
    const limits = decode<Account>(jwt ?? '').nats.limits ?? {};
    expect(limits.consumer).toBe(1024);
    for (const key of [
      'subs',
      'conn',
      'leaf',
      'data',
      'payload',
      'imports',
      'exports',
      'mem_storage',
      'disk_storage',
    ]) {
      expect(limits[key as keyof typeof limits], key).toBe(-1);
    }
    expect(limits.streams).toBe(-1);
    expect(limits.wildcards).toBe(true);
  });

  it('reports health with a round trip', async () => {
    expect((await bus.health()).ok).toBe(true);
  });
});

describe('Bus restart on the same data dir', () => {
  it('close() stops the child; a restart reuses keys, accounts and stream data', async () => {
    const dataDir = await tempDir();
    const layout = natsLayout(busRoot(dataDir));
    const first = await Bus.start({ dataDir, tenants: ['R'], logger });
    const pid = first.managedPid;
    expect(pid).toBeGreaterThan(0);
    expect((await readFile(layout.pidFile, 'utf8')).trim()).toBe(String(pid));
    await jetstream(await first.tenantConnection('R')).publish('msg.1', 'kept across restart', { msgID: 'r-1' });
    const user = await first.mintUserCreds('R', { name: 'survivor' });
    const seedBefore = await readFile(tenantFiles(layout, 'R').accountSeedFile, 'utf8');
    expect((await stat(tenantFiles(layout, 'R').accountSeedFile)).mode & 0o777).toBe(0o600);
    expect((await stat(layout.operatorSigningSeedFile)).mode & 0o777).toBe(0o600);

    await first.close();
    await first.close(); // idempotent
    expect(pidAlive(pid ?? 0)).toBe(false);
    await expect(stat(layout.pidFile)).rejects.toThrow();
    expect((await first.health()).ok).toBe(false);

    const second = await Bus.start({ dataDir, tenants: ['R'], logger });
    try {
      expect(second.managedPid).not.toBe(pid);
      expect(await readFile(tenantFiles(layout, 'R').accountSeedFile, 'utf8')).toBe(seedBefore);
      const jsm = await jetstreamManager(await second.tenantConnection('R'));
      expect((await jsm.streams.getMessage('SVC_MSGS', { seq: 1 }))?.string()).toBe('kept across restart');
      // Creds minted before the restart still connect: same operator and account keys.
      const nc = await userConnect(second.clientUrl, user.creds);
      await nc.flush();

      // A child that dies is restarted; the relay's connections find it again.
      const crashed = second.managedPid ?? 0;
      process.kill(crashed, 'SIGKILL');
      const deadline = Date.now() + 10_000;
      while (second.managedPid === undefined || second.managedPid === crashed || !(await second.health()).ok) {
        if (Date.now() > deadline) {
          const detail = `pid ${second.managedPid}, health ${JSON.stringify(await second.health())}`;
          throw new Error(`managed nats-server was not restarted: ${detail}\n${logLines.slice(-15).join('')}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await readFile(layout.pidFile, 'utf8')).trim()).toBe(String(second.managedPid));
      // A publish racing the client's reconnect can be lost; retrying with the same
      // message id is safe because the stream drops duplicates.
      const js = jetstream(await second.tenantConnection('R'), { timeout: 500 });
      let seq = 0;
      for (let attempt = 0; seq === 0 && attempt < 10; attempt++) {
        seq = await js.publish('msg.2', 'after crash', { msgID: 'r-2' }).then(
          (ack) => ack.seq,
          () => 0,
        );
      }
      expect(seq).toBe(2);
      expect((await second.health()).ok).toBe(true);
    } finally {
      await second.close();
    }
  });

  it('never logs seeds or creds', async () => {
    const all = logLines.join('');
    expect(all.length).toBeGreaterThan(0);
    expect(all).not.toMatch(/\bS[OAU][A-Z2-7]{56}\b/);
    expect(all).not.toContain('NATS USER JWT');
    expect(all).not.toContain('NKEY SEED');
  });
});
