import { createServer } from 'node:net';

/**
 * Asks the OS for a free TCP port on `host`: one it hands out for a listener that closes
 * at once. Used where a server's port must be known before it starts (nats-server's own
 * random port would have to be read back from a ports file).
 */
export function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('could not pick a free port'))));
    });
  });
}
