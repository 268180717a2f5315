import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Ports a caller must not be offered: it will listen on them itself, or handed them out already. */
export interface PortsTaken {
  has(port: number): boolean;
}

/** The lowest port picked from: below it are the well-known ones other software listens on. */
const LOWEST = 16_384;
/** Fewer ports than this below the OS's ephemeral range, and the OS picks instead. */
const FEWEST = 4096;
/** Ports tried before the OS is asked. */
const TRIES = 64;

/**
 * A free TCP port on `host`, for a server whose port must be known before it starts
 * (nats-server's own random port would have to be read back from a ports file).
 *
 * Picked below the range the OS gives outgoing connections their local ports from (Linux:
 * ip_local_port_range, 32768-60999 by default), and checked by listening on it. A port the
 * OS hands out for a listener that closes at once comes from that range: in the moment
 * before its server listened, any connection made on the machine could take it as its
 * local port, and the server could not listen (CI failed so once). Each process walks up
 * from a random start of its own: random picks gave two of a test suite's processes one
 * port within seconds of each other twice in a run (3,300 picks), and one of them could
 * have found it taken. The OS picks where that range leaves too few ports below it.
 *
 * `taken` names ports free only because their owner has not started listening yet: those
 * are never offered (a relay given port P for HTTP once started its nats-server on P, and
 * then could not listen).
 */
export async function findFreePort(host = '127.0.0.1', taken?: PortsTaken): Promise<number> {
  const range = portsBelowEphemeral();
  const port = range && (await firstListenable(host, nextPorts(range, TRIES), taken));
  if (port) return port;
  for (;;) {
    const offered = await listenOnce(host, 0);
    if (offered !== undefined && !taken?.has(offered)) return offered;
  }
}

/** Where this process looks next. */
let cursor: number | undefined;

function* nextPorts(range: { from: number; to: number }, count: number): Generator<number> {
  cursor ??= randomInt(range.from, range.to + 1);
  for (let i = 0; i < count; i++) {
    const port: number = cursor;
    cursor = port >= range.to ? range.from : port + 1;
    yield port;
  }
}

/** The first of `candidates` not taken that a server can listen on at once. */
export async function firstListenable(
  host: string,
  candidates: Iterable<number>,
  taken?: PortsTaken,
): Promise<number | undefined> {
  for (const port of candidates) {
    if (!taken?.has(port) && (await canListen(host, port))) return port;
  }
  return undefined;
}

let cachedRange: { from: number; to: number } | null | undefined;

/** The ports from LOWEST up to the OS's ephemeral range; null where it is unknown or too small. */
export function portsBelowEphemeral(): { from: number; to: number } | null {
  if (cachedRange !== undefined) return cachedRange;
  let low: number | undefined;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    // not Linux: the OS picks
  }
  cachedRange = low && Number.isInteger(low) && low - LOWEST >= FEWEST ? { from: LOWEST, to: low - 1 } : null;
  return cachedRange;
}

async function canListen(host: string, port: number): Promise<boolean> {
  try {
    return (await listenOnce(host, port)) === port;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') return false;
    throw err;
  }
}

/** Listens on host:port and closes at once; the port it listened on. */
function listenOnce(host: string, port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(port, host, () => {
      const addr = srv.address();
      const bound = typeof addr === 'object' && addr ? addr.port : undefined;
      srv.close(() => (bound ? resolve(bound) : reject(new Error('could not pick a free port'))));
    });
  });
}
