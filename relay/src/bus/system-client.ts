import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';

/**
 * Requests on the system account: pushing account JWTs to the full resolver and
 * asking the server about itself. Only a system-account user may send these.
 */

const CLAIMS_UPDATE = '$SYS.REQ.CLAIMS.UPDATE';

interface ServerApiResponse {
  server?: { name?: string; id?: string };
  data?: { code?: number; message?: string; account?: string } & Record<string, unknown>;
  error?: { code?: number; description?: string; account?: string };
}

export async function connectWithCreds(
  url: string,
  creds: string,
  name: string,
  extra: { reconnect?: boolean; timeoutMs?: number; noEcho?: boolean } = {},
): Promise<NatsConnection> {
  return connect({
    // A cluster is given as a comma-separated list: the client tries each and fails over.
    servers: url
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean),
    name,
    authenticator: credsAuthenticator(new TextEncoder().encode(creds)),
    reconnect: extra.reconnect ?? true,
    // The relay outlives a restart of nats-server: keep trying instead of giving up.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    timeout: extra.timeoutMs ?? 2000,
    noEcho: extra.noEcho ?? false,
  });
}

/**
 * Pushes an account JWT to the full resolver and waits for a server to confirm it.
 * The server stores the JWT on disk and applies it to a live account at once, which
 * is how tenants are added and users revoked without a restart.
 */
export async function pushAccountJwt(sys: NatsConnection, jwt: string, what: string, timeoutMs: number): Promise<void> {
  let body: ServerApiResponse;
  try {
    const reply = await sys.request(CLAIMS_UPDATE, jwt, { timeout: timeoutMs });
    body = reply.json<ServerApiResponse>();
  } catch (err) {
    throw new Error(
      `the message bus did not confirm the account update for ${what} within ${timeoutMs} ms (${CLAIMS_UPDATE}): ${(err as Error).message}; check that nats-server is running with the full resolver`,
      { cause: err },
    );
  }
  if (body.error) {
    throw new Error(
      `the message bus refused the account update for ${what}: ${body.error.description ?? `code ${body.error.code}`}`,
    );
  }
  const code = body.data?.code;
  if (code !== undefined && code !== 200) {
    throw new Error(`the message bus refused the account update for ${what}: ${body.data?.message ?? `code ${code}`}`);
  }
}

/**
 * The account JWT the server currently holds. The server does not answer for an
 * account it does not know, so an unknown account ends in a timeout error.
 */
export async function lookupAccountJwt(
  sys: NatsConnection,
  accountPub: string,
  timeoutMs: number,
): Promise<string | undefined> {
  const reply = await sys.request(`$SYS.REQ.ACCOUNT.${accountPub}.CLAIMS.LOOKUP`, '', { timeout: timeoutMs });
  const text = reply.string().trim();
  return text.length > 0 ? text : undefined;
}

/**
 * The accounts the server's full resolver holds (the first server to answer, in a
 * cluster). Unlike a lookup, it answers at once for an account nobody pushed yet.
 */
export async function listAccounts(sys: NatsConnection, timeoutMs: number): Promise<string[]> {
  const reply = await sys.request('$SYS.REQ.CLAIMS.LIST', '', { timeout: timeoutMs });
  const body = reply.json<{ data?: unknown }>();
  if (!Array.isArray(body.data)) throw new Error('the message bus did not list its accounts');
  return body.data.filter((a): a is string => typeof a === 'string');
}

/** Whether the server (any server, in a cluster) reports JetStream enabled. */
export async function jetstreamReady(sys: NatsConnection, timeoutMs: number): Promise<boolean> {
  const reply = await sys.request('$SYS.REQ.SERVER.PING.JSZ', '', { timeout: timeoutMs });
  const body = reply.json<ServerApiResponse>();
  if (body.error || !body.data) return false;
  return body.data.disabled !== true && body.data.config !== undefined;
}

/** How many servers take part in JetStream: the meta group's size, 1 for a standalone server. */
export async function jetstreamClusterSize(sys: NatsConnection, timeoutMs: number): Promise<number> {
  const reply = await sys.request('$SYS.REQ.SERVER.PING.JSZ', '', { timeout: timeoutMs });
  const body = reply.json<ServerApiResponse>();
  const meta = body.data?.meta_cluster as { cluster_size?: number } | undefined;
  return typeof meta?.cluster_size === 'number' && meta.cluster_size > 0 ? meta.cluster_size : 1;
}
