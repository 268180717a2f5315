import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { findFreePort, firstListenable, portsBelowEphemeral } from './free-port.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listenOn(port: number): Promise<Server> {
  const srv = createServer();
  servers.push(srv);
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', resolve);
  });
  return srv;
}

const range = portsBelowEphemeral();

describe('findFreePort', () => {
  it('gives a port a server can listen on', async () => {
    await listenOn(await findFreePort());
  });

  it.skipIf(range === null)(
    'never one of the range outgoing connections take their local ports from, where the OS has one',
    async () => {
      if (!range) return;
      const ports = new Set<number>();
      for (let i = 0; i < 20; i++) {
        const port = await findFreePort();
        expect(port).toBeGreaterThanOrEqual(range.from);
        expect(port).toBeLessThanOrEqual(range.to);
        ports.add(port);
      }
      // nor one this process was given already
      expect(ports.size).toBe(20);
    },
  );

  it('never one something listens on: the next is tried', async () => {
    const busy = await findFreePort();
    await listenOn(busy);
    const other = await findFreePort();
    expect(await firstListenable('127.0.0.1', [busy, busy, other])).toBe(other);
    expect(await firstListenable('127.0.0.1', [busy])).toBeUndefined();
  });

  it('never one named taken', async () => {
    const refused: number[] = [];
    // the first three offered are someone's (a relay's own HTTP port, say)
    const taken = {
      has(port: number) {
        if (refused.includes(port)) return true;
        if (refused.length === 3) return false;
        refused.push(port);
        return true;
      },
    };
    const port = await findFreePort('127.0.0.1', taken);
    expect(refused).toHaveLength(3);
    expect(refused).not.toContain(port);
  });
});
