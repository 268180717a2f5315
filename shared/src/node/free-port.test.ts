import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { findFreePort } from './free-port.js';

describe('findFreePort', () => {
  it('gives a port a server can listen on', async () => {
    const port = await findFreePort();
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => srv.close(resolve));
  });

  it('never one named taken: it asks the OS again', async () => {
    const refused: number[] = [];
    // the first three the OS offers are someone's (a relay's own HTTP port, say)
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
