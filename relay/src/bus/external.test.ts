import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bus, findFreePort, writeNatsServerConfig } from './index.js';
import { resolveNatsServerBin } from './managed-server.js';

const logger = pino({ level: 'silent' });
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bus-ext-'));
  dirs.push(dir);
  return dir;
}

afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('Bus against an external nats-server', () => {
  let server: ChildProcess;
  let serverExited: Promise<void>;
  let bus: Bus;
  let user: NatsConnection | undefined;
  let root: string;
  let busOptions: Parameters<typeof Bus.start>[0];

  beforeAll(async () => {
    root = await tempDir();
    const written = await writeNatsServerConfig(join(root, 'server'), { port: await findFreePort() });
    server = spawn('nats-server', ['-c', written.configFile], { stdio: 'ignore' });
    serverExited = new Promise((resolve) => server.once('exit', () => resolve()));
    // Bus.start waits for the server itself: its system connection retries until it is up.
    busOptions = {
      dataDir: join(root, 'relay'),
      tenants: ['X'],
      logger,
      natsUrl: written.url,
      operatorSeedFile: written.operatorSeedFile,
      systemCredsFile: written.systemCredsFile,
      requestTimeoutMs: 500,
      tenantLimits: { consumers: 2 },
    };
    bus = await startWithRetry(busOptions);
  });

  afterAll(async () => {
    await user?.close();
    await bus?.close();
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGTERM');
    await serverExited;
  });

  it('works with natsUrl, operator signing seed and system creds; no child is managed', async () => {
    expect(bus.managedPid).toBeUndefined();
    expect(await bus.health()).toMatchObject({ ok: true });
    const { creds } = await bus.mintUserCreds('X', { name: 'agent-x', pub: ['msg.>', '$JS.API.>'], sub: ['_INBOX.>'] });
    user = await connect({
      servers: bus.clientUrl,
      authenticator: credsAuthenticator(new TextEncoder().encode(creds)),
      reconnect: false,
    });
    const got = await (await bus.tenantConnection('X')).subscribe('msg.9', { max: 1 });
    const received = (async () => {
      for await (const m of got) return m.string();
    })();
    await (await bus.tenantConnection('X')).flush();
    user.publish('msg.9', 'over the external bus');
    expect(await received).toBe('over the external bus');
  });

  it('enforces the configured consumer cap server-side (JetStream error 10026)', async () => {
    const jsm = await jetstreamManager(await bus.tenantConnection('X'));
    expect((await jsm.streams.info('SVC_MSGS')).config.max_consumers).toBe(2);
    await jsm.consumers.add('SVC_MSGS', { durable_name: 'c1' });
    await jsm.consumers.add('SVC_MSGS', { durable_name: 'c2' });
    const third = await jsm.consumers.add('SVC_MSGS', { durable_name: 'c3' }).catch((err: unknown) => err);
    expect(third).toBeInstanceOf(JetStreamApiError);
    expect((third as JetStreamApiError).code).toBe(10026);
  });

  it('revokes right after a tenant is created (same second)', async () => {
    await bus.ensureTenant('Y');
    const victim = await bus.mintUserCreds('Y', { name: 'victim' });
    const nc = await connect({
      servers: bus.clientUrl,
      authenticator: credsAuthenticator(new TextEncoder().encode(victim.creds)),
      reconnect: false,
    });
    await bus.revokeUsers('Y', [victim.publicKey]);
    await nc.closed();
    expect(nc.isClosed()).toBe(true);
  });

  it('another relay instance with its own copy of the keys never un-revokes a user', async () => {
    // B's data dir is a copy made before A revoked: its own state file knows nothing of it
    const copy = join(await tempDir(), 'relay-b');
    await cp(join(root, 'relay'), copy, { recursive: true });
    const victim = await bus.mintUserCreds('X', { name: 'revoked-on-a' });
    const open = () =>
      connect({
        servers: bus.clientUrl,
        authenticator: credsAuthenticator(new TextEncoder().encode(victim.creds)),
        reconnect: false,
      });
    const before = await open();
    await bus.revokeUsers('X', [victim.publicKey]);
    await before.closed();
    // B starts and pushes the account JWT from its keys and state
    const b = await Bus.start({ ...busOptions, dataDir: copy });
    try {
      await expect(open()).rejects.toThrow(/authorization/i);
    } finally {
      await b.close();
    }
  });

  it("a new tenant's first push looks up no account the server does not hold (that only times out)", async () => {
    // a system user that sees the bus's requests: account pushes and account lookups, in order
    const spy = await connect({
      servers: bus.clientUrl,
      authenticator: credsAuthenticator(await readFile(busOptions.systemCredsFile as string)),
      reconnect: false,
    });
    const seen: string[] = [];
    const watch = (subject: string, what: (subject: string, data: string) => string) => {
      const sub = spy.subscribe(subject);
      void (async () => {
        for await (const m of sub) seen.push(what(m.subject, m.string()));
      })();
    };
    const account = (jwt: string) =>
      (JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as { sub: string }).sub;
    watch('$SYS.REQ.CLAIMS.UPDATE', (_, jwt) => `push ${account(jwt)}`);
    watch('$SYS.REQ.ACCOUNT.*.CLAIMS.LOOKUP', (subject) => `lookup ${subject.split('.')[3]}`);
    await spy.flush();
    try {
      await bus.ensureTenant('NEW');
      await spy.flush();
      const pushed = seen.find((s) => s.startsWith('push '))?.slice('push '.length);
      expect(pushed).toBeDefined();
      const ofNew = seen.filter((s) => s.endsWith(` ${pushed}`));
      expect(ofNew[0]).toBe(`push ${pushed}`);
    } finally {
      await spy.close();
    }
  });

  it('revokeUsers throws when the server does not confirm the push', async () => {
    server.kill('SIGTERM');
    await serverExited;
    const { publicKey } = await bus.mintUserCreds('X', { name: 'late' });
    const started = Date.now();
    await expect(bus.revokeUsers('X', [publicKey])).rejects.toThrow(/did not confirm the account update/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect((await bus.health()).ok).toBe(false);
  });
});

describe('missing nats-server binary', () => {
  it('fails with the one-line actionable error and writes nothing', async () => {
    const dataDir = await tempDir();
    // a path the operator gave is named
    const given = join(dataDir, 'no-such-nats-server');
    await expect(Bus.start({ dataDir, tenants: [], logger, natsServerBin: given })).rejects.toMatchObject({
      code: 'dependency_missing',
      message: `SVC_RELAY_NATS_SERVER_BIN is "${given}", which is not an executable file: point it at the nats-server executable, unset it to find nats-server on PATH or in /usr/sbin, or set SVC_RELAY_NATS_URL`,
    });
    await expect(resolveNatsServerBin('my-nats', dataDir, join(dataDir, 'not-here'))).rejects.toThrow(
      'SVC_RELAY_NATS_SERVER_BIN is "my-nats", which is not on PATH',
    );

    // by name: PATH, then Debian's /usr/sbin (a normal user's PATH lacks it)
    await expect(resolveNatsServerBin('nats-server', dataDir, join(dataDir, 'not-here'))).rejects.toThrow(
      'nats-server not found (on PATH, nor in /usr/sbin): install it with `sudo apt-get install -y nats-server`, point SVC_RELAY_NATS_SERVER_BIN at it, or set SVC_RELAY_NATS_URL',
    );
    const debian = join(dataDir, 'sbin-nats-server');
    await writeFile(debian, '#!/bin/sh\n', { mode: 0o755 });
    expect(await resolveNatsServerBin('nats-server', dataDir, debian)).toBe(debian);
    await expect(stat(join(dataDir, 'nats'))).rejects.toThrow();
  });
});

/** The spawned server needs a moment before it listens; Bus.start fails fast on a refused connection. */
async function startWithRetry(opts: Parameters<typeof Bus.start>[0]): Promise<Bus> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return await Bus.start(opts);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
