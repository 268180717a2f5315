/**
 * An edge machine's nats-server for tests: a real Debian nats-server that is a leaf node
 * of the relay's hub, dialing the hub's leaf URL with relay-uplink/v1 creds from a file
 * (rewritten on rotation; the server reads it again on each reconnect).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { UplinkCreds } from '@svc/shared';
import { freePort, tempDir } from '@svc/test-harness';
import { call, sourceClaimBody, type TestAgent } from '@svc/test-harness/agent-client';
import type { BusRelay } from '@svc/test-harness/in-process-bus';
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

export interface StartedEdge {
  /** the machine's uplink identity (nats-relay) */
  identity: TestAgent;
  creds: UplinkCreds;
  server: EdgeServer;
  /** a client of the edge with the creds' inbox prefix */
  client: NatsConnection;
}

/**
 * A machine's edge as the daemon sets it up: an uplink identity `name` claims each of
 * `agents` (with the agent's consent), asks for leaf creds, and its nats-server joins the
 * hub as a leaf node with them.
 */
export async function startEdgeFor(relay: BusRelay, name: string, agents: readonly TestAgent[]): Promise<StartedEdge> {
  const identity = await relay.enroll(name, undefined, ['nats-relay']);
  for (const agent of agents) {
    const claim = await call(
      relay.url,
      'POST',
      '/api/v1/sources',
      sourceClaimBody(agent, identity.number),
      identity.auth,
    );
    if (claim.status !== 200)
      throw new Error(`claim of ${agent.agentId} failed: ${claim.status} ${JSON.stringify(claim.body)}`);
  }
  const res = await call<UplinkCreds>(relay.url, 'POST', '/api/v1/nats/issue-leaf-creds', {}, identity.auth);
  if (res.status !== 200) throw new Error(`issue-leaf-creds failed: ${res.status} ${JSON.stringify(res.body)}`);
  const server = await startEdgeServer(res.body.leaf_url, res.body.creds);
  const client = await server.connect(res.body.inbox_prefix).catch(async (err: Error) => {
    await server.stop();
    throw err;
  });
  return { identity, creds: res.body, server, client };
}
