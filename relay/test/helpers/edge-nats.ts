/**
 * An edge machine's nats-server for tests: a real Debian nats-server that is a leaf node
 * of the relay's hub, dialing the hub's leaf URL with relay-uplink/v1 creds from a file
 * (rewritten on rotation; the server reads it again on each reconnect).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { freePort, tempDir } from '@svc/test-harness';
import { pino } from 'pino';
import { ManagedNatsServer, resolveNatsServerBin } from '../../src/bus/managed-server.js';

export interface EdgeServer {
  url: string;
  credsFile: string;
  writeCreds(creds: string): void;
  /** a client of the edge; `inboxPrefix` is the one its creds name (replies elsewhere never cross the link) */
  connect(inboxPrefix?: string): Promise<NatsConnection>;
  stop(): Promise<void>;
}

export async function startEdgeServer(leafUrl: string, creds: string): Promise<EdgeServer> {
  const dir = tempDir('svc-edge-');
  const port = await freePort();
  const credsFile = join(dir, 'uplink.creds');
  writeFileSync(credsFile, creds, { mode: 0o600 });
  const configFile = join(dir, 'edge.conf');
  writeFileSync(
    configFile,
    [
      'host: "127.0.0.1"',
      `port: ${port}`,
      'leafnodes: {',
      '  reconnect: 1',
      `  remotes: [ { url: ${JSON.stringify(leafUrl)}, credentials: ${JSON.stringify(credsFile)} } ]`,
      '}',
    ].join('\n'),
  );
  const server = await ManagedNatsServer.start({
    bin: await resolveNatsServerBin('nats-server'),
    configFile,
    host: '127.0.0.1',
    port,
    pidFile: join(dir, 'edge.pid'),
    logger: pino({ level: 'silent' }),
  });
  const url = `nats://127.0.0.1:${port}`;
  return {
    url,
    credsFile,
    writeCreds: (c) => writeFileSync(credsFile, c, { mode: 0o600 }),
    connect: (inboxPrefix) => connect({ servers: url, name: 'edge-client', ...(inboxPrefix ? { inboxPrefix } : {}) }),
    stop: () => server.stop(),
  };
}
