/**
 * The system connection to a managed nats-server the relay has just started is tried again
 * while it times out (a loaded machine: the relay once gave up after 2 s at the test suite's
 * peak); to an external NATS it is tried once. The slow server is a proxy that holds its
 * first connections silent, then forwards to a real nats-server.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSystem, findFreePort, writeNatsServerConfig } from './index.js';

let server: ChildProcess;
let natsPort: number;
let creds: string;
const sockets: Socket[] = [];
beforeAll(async () => {
  natsPort = await findFreePort();
  const written = await writeNatsServerConfig(join(tempDir('svc-connect-system-'), 'server'), { port: natsPort });
  server = spawn('nats-server', ['-c', written.configFile], { stdio: 'ignore' });
  creds = await readFile(written.systemCredsFile, 'utf8');
});
afterAll(() => {
  for (const s of sockets) s.destroy();
  server?.kill('SIGTERM');
});

/** A proxy whose connections stay silent until `silentMs` after it starts. */
async function slowProxy(silentMs: number): Promise<{ url: string; server: Server }> {
  const opened = Date.now();
  const proxy = createServer((client) => {
    sockets.push(client);
    const wait = Math.max(0, opened + silentMs - Date.now());
    setTimeout(() => {
      if (client.destroyed) return;
      const upstream = tcpConnect(natsPort, '127.0.0.1');
      sockets.push(upstream);
      client.pipe(upstream).pipe(client);
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    }, wait);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return { url: `nats://127.0.0.1:${(proxy.address() as { port: number }).port}`, server: proxy };
}

describe('the system connection at start', () => {
  it('to the managed server: tried again while it times out; to an external one: once', async () => {
    const external = await slowProxy(1500);
    await expect(connectSystem(external.url, creds, 300, false)).rejects.toThrow(/timeout/i);
    external.server.close();

    const managed = await slowProxy(1500);
    const nc = await connectSystem(managed.url, creds, 300, true, 20_000);
    expect(nc.isClosed()).toBe(false);
    await nc.close();
    managed.server.close();
  }, 30_000);
});
