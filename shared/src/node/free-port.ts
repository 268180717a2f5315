import { createServer } from 'node:net';

/** Ports a caller must not be offered: it will listen on them itself, or handed them out already. */
export interface PortsTaken {
  has(port: number): boolean;
}

/**
 * Asks the OS for a free TCP port on `host`: one it hands out for a listener that closes
 * at once. Used where a server's port must be known before it starts (nats-server's own
 * random port would have to be read back from a ports file). The OS may offer a port that
 * is free only because its owner has not started listening yet: `taken` names those, and
 * another is asked for (a relay given port P for HTTP once started its nats-server on P,
 * and then could not listen).
 */
export async function findFreePort(host = '127.0.0.1', taken?: PortsTaken): Promise<number> {
  for (;;) {
    const port = await askOs(host);
    if (!taken?.has(port)) return port;
  }
}

function askOs(host: string): Promise<number> {
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
