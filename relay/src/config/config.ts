/** Step two: validate raw settings, apply defaults, return the typed configuration. */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { SvcError, TENANT_ID_PATTERN } from '@svc/shared';
import { type RawSettings, RETIRED_SETTINGS } from './env.js';

export interface AuthorityConfig {
  issuer: string;
  audience: string;
  clientId: string;
  jwksUrl: string | undefined;
  caPem: string | undefined;
}

export interface RelayConfig {
  host: string;
  port: number;
  publicUrl: string;
  dataDir: string;
  /**
   * A file holding the PostgreSQL ledger's DSN (a postgres:// URL, password included: the
   * file is the secret, the URL is never logged). Undefined: the SQLite ledger in the data dir.
   */
  ledgerDsnFile: string | undefined;
  /** Undefined means: take it from the deployment in the data dir. */
  deploymentId: string | undefined;
  tenants: string[];
  defaultTenant: string;
  nats: {
    url: string | undefined;
    /** Managed mode: the nats-server to run (a name looked up on PATH, then Debian's /usr/sbin, or a path). */
    serverBin: string;
    operatorSeedFile: string | undefined;
    systemCredsFile: string | undefined;
    /**
     * JetStream replicas of each tenant stream (1–5): 3 on a three-node cluster keeps every
     * envelope through the loss of one node. The managed single server allows only 1.
     */
    streamReplicas: number;
    /** Managed mode: the hub's leaf node listener for edge machines; absent = none. */
    leafListen: { host: string; port: number } | undefined;
    /** host:port edges dial (given to them with their creds); default the listen address. */
    leafAdvertise: string | undefined;
  };
  /** Undefined: administrator tokens are refused (the local `svc-relay grant` still works). */
  authority: AuthorityConfig | undefined;
  allowPrivateWebhooks: boolean;
  /** Extra CA bundle (PEM) trusted for webhook TLS, on top of the system roots. */
  webhookCaPem: string | undefined;
  /** Webhook attempt schedule (not settings: fixed by the specification; tests shorten it). */
  webhooks: WebhookTiming;
  apiKeyTtlSeconds: number;
  logLevel: string;
  /**
   * Reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For names the client:
   * rate limits then count per client instead of per proxy. Empty: the header is ignored.
   */
  trustedProxies: string[];
  limits: RelayLimits;
  /** Settings given that this relay no longer reads (RETIRED_SETTINGS): named in a warning at start. */
  retiredSettings: string[];
  /** what the settings allow but an operator most likely did not mean: logged at start */
  startWarnings: string[];
}

export interface WebhookTiming {
  /** how long one attempt may take */
  timeoutMs: number;
  /** the waits before the 2nd, 3rd … attempt */
  retryDelaysMs: readonly number[];
}

/** Specification, "Webhooks": 5 s per attempt, retried after 1 s and 2 s. */
export const WEBHOOK_TIMING: WebhookTiming = { timeoutMs: 5000, retryDelaysMs: [1000, 2000] };

/** Rate limits and quotas; 0 in a rate or quota means no limit. */
export interface RelayLimits {
  /** Requests per minute from one source address to the unauthenticated routes (burst: as many). */
  authPerAddressPerMinute: number;
  /** Requests per minute naming one enrollment code, or one API key, on those routes. */
  authPerAgentPerMinute: number;
  /** Envelopes per second one agent may send, sustained … */
  sendPerAgentPerSecond: number;
  /** … and at once (the bucket's size). */
  sendBurstPerAgent: number;
  /** Pending (unacknowledged) envelopes one recipient may hold, by count and by bytes. */
  recipientMaxPending: number;
  recipientMaxPendingBytes: number;
  /** Each tenant's message stream (SVC_MSGS; SVC_ACKS gets the same) by count and by bytes. */
  tenantMaxMessages: number;
  tenantMaxBytes: number;
  /** Message event streams one agent may hold open at once on this relay instance. */
  streamsPerAgent: number;
  /** The largest attachment blob (encrypted bytes) one upload may hold. */
  blobMaxBytes: number;
  /** Each tenant's blob store (SVC_BLOBS) by bytes. */
  tenantMaxBlobBytes: number;
  /** Bytes of blobs one agent may have stored at once (its share of the tenant's store). */
  agentMaxBlobBytes: number;
  /** Named sources (one durable consumer each) per tenant and per edge machine. */
  sourcesPerTenant: number;
  sourcesPerEdge: number;
  /** Consumers of one tenant account in all (the relay enforces it; streams' max_consumers back it). */
  tenantMaxConsumers: number;
  /** Lifetime of relay-uplink/v1 credentials. */
  leafCredsTtlSeconds: number;
}

export const DEFAULT_LIMITS: RelayLimits = {
  authPerAddressPerMinute: 120,
  authPerAgentPerMinute: 20,
  sendPerAgentPerSecond: 200,
  sendBurstPerAgent: 2_000,
  recipientMaxPending: 10_000,
  recipientMaxPendingBytes: 256 * 1024 * 1024,
  tenantMaxMessages: 1_000_000,
  tenantMaxBytes: 1024 * 1024 * 1024,
  streamsPerAgent: 8,
  blobMaxBytes: 25 * 1024 * 1024,
  tenantMaxBlobBytes: 1024 * 1024 * 1024,
  agentMaxBlobBytes: 256 * 1024 * 1024,
  sourcesPerTenant: 400,
  sourcesPerEdge: 64,
  tenantMaxConsumers: 1024,
  leafCredsTtlSeconds: 24 * 60 * 60,
};

const LIMIT_SETTINGS: Array<[keyof RelayLimits, keyof RawSettings]> = [
  ['authPerAddressPerMinute', 'SVC_RELAY_AUTH_RATE_PER_ADDRESS'],
  ['authPerAgentPerMinute', 'SVC_RELAY_AUTH_RATE_PER_AGENT'],
  ['sendPerAgentPerSecond', 'SVC_RELAY_SEND_RATE_PER_AGENT'],
  ['sendBurstPerAgent', 'SVC_RELAY_SEND_BURST_PER_AGENT'],
  ['recipientMaxPending', 'SVC_RELAY_RECIPIENT_MAX_PENDING'],
  ['recipientMaxPendingBytes', 'SVC_RELAY_RECIPIENT_MAX_PENDING_BYTES'],
  ['tenantMaxMessages', 'SVC_RELAY_TENANT_MAX_MESSAGES'],
  ['tenantMaxBytes', 'SVC_RELAY_TENANT_MAX_BYTES'],
  ['streamsPerAgent', 'SVC_RELAY_STREAMS_PER_AGENT'],
  ['blobMaxBytes', 'SVC_RELAY_BLOB_MAX_BYTES'],
  ['tenantMaxBlobBytes', 'SVC_RELAY_TENANT_MAX_BLOB_BYTES'],
  ['agentMaxBlobBytes', 'SVC_RELAY_AGENT_MAX_BLOB_BYTES'],
  ['sourcesPerTenant', 'SVC_RELAY_SOURCES_PER_TENANT'],
  ['sourcesPerEdge', 'SVC_RELAY_SOURCES_PER_EDGE'],
  ['tenantMaxConsumers', 'SVC_RELAY_TENANT_MAX_CONSUMERS'],
  ['leafCredsTtlSeconds', 'SVC_RELAY_LEAF_CREDS_TTL_SECONDS'],
];

/**
 * Only these must stay positive: a blob limit of "none" would let one upload take the
 * relay's memory, a consumer cap of 0 would deny every consumer, and 0 s creds would be
 * dead on arrival.
 */
const POSITIVE_ONLY = new Set<keyof RelayLimits>([
  'blobMaxBytes',
  'sourcesPerTenant',
  'sourcesPerEdge',
  'tenantMaxConsumers',
  'leafCredsTtlSeconds',
]);

/**
 * Upper bounds, with why. An edge's uplink account JWT carries three imports, each with an
 * activation, per source it holds (7.6 KB with a 128-character agent number; 968 KB at 128
 * sources) and is pushed to nats-server as one message, within its 1 MB max_payload; the
 * rest is left for the account's revocation list.
 */
export const SOURCES_PER_EDGE_MAX = 120;
const MAXIMUM: Partial<Record<keyof RelayLimits, { max: number; why: string }>> = {
  sourcesPerEdge: { max: SOURCES_PER_EDGE_MAX, why: "an edge's uplink account must fit one NATS message" },
};

function trustedProxiesFrom(raw: string | undefined): string[] {
  const list = (raw ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of list) {
    const [address, prefix, ...rest] = p.split('/');
    const family = isIP(address ?? '');
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || rest.length > 0) {
      fail(`SVC_RELAY_TRUSTED_PROXIES: "${p}" is not an IP address or CIDR range`);
    }
  }
  return list;
}

function hostPortFrom(name: string, raw: string | undefined): { host: string; port: number } | undefined {
  if (raw === undefined) return undefined;
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(raw.trim());
  const host = m?.[1];
  const port = Number(m?.[2]);
  if (host === undefined || !Number.isInteger(port) || port < 1 || port > 65535)
    return fail(`${name} must be host:port (got "${raw}")`);
  return { host: host.replace(/^\[|\]$/g, ''), port };
}

/** JetStream's own range; more replicas than the external cluster has nodes fails at start (bus). */
export const MAX_STREAM_REPLICAS = 5;

function streamReplicasFrom(s: RawSettings): number {
  const raw = s.SVC_RELAY_STREAM_REPLICAS;
  if (raw === undefined) return 1;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < 1 || n > MAX_STREAM_REPLICAS) {
    fail(`SVC_RELAY_STREAM_REPLICAS must be an integer from 1 to ${MAX_STREAM_REPLICAS} (got "${raw}")`);
  }
  if (n > 1 && !s.SVC_RELAY_NATS_URL) {
    fail(
      `SVC_RELAY_STREAM_REPLICAS=${n} needs a NATS cluster (SVC_RELAY_NATS_URL): the managed nats-server is a single node, which holds 1 replica`,
    );
  }
  return n;
}

function limitsFrom(s: RawSettings): RelayLimits {
  const limits = { ...DEFAULT_LIMITS };
  for (const [key, name] of LIMIT_SETTINGS) {
    const raw = s[name];
    if (raw === undefined) continue;
    const n = Number(raw);
    const min = POSITIVE_ONLY.has(key) ? 1 : 0;
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min) {
      fail(`${name} must be an integer ≥ ${min}${min === 0 ? ' (0 = no limit)' : ''} (got "${raw}")`);
    }
    const cap = MAXIMUM[key];
    if (cap && n > cap.max) fail(`${name} must be at most ${cap.max}: ${cap.why} (got "${raw}")`);
    limits[key] = n;
  }
  return limits;
}

const fail = (message: string): never => {
  throw new SvcError('config_invalid', message);
};

function requireHttps(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail(`${name} is not a URL: ${value}`);
  }
  if (url.protocol !== 'https:')
    fail(`${name} must be an https URL (got ${url.protocol}//…); the relay refuses non-https authorities`);
  return value;
}

function parseListen(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || !host || !Number.isInteger(port) || port < 0 || port > 65535) {
    return fail(`SVC_RELAY_LISTEN must be host:port (got "${value}")`);
  }
  return { host, port };
}

/** A CA bundle file: read and checked here, so a file that holds no certificate is refused at start. */
function readCa(name: string, file: string | undefined): string | undefined {
  if (!file) return undefined;
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    return fail(`${name}: cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    new X509Certificate(pem);
  } catch {
    fail(`${name}: ${file} holds no PEM certificate`);
  }
  return pem;
}

/** Authority settings that only mean something with an issuer, and those only with the broker. */
const ISSUER_SETTINGS = [
  'SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE',
  'SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID',
  'SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL',
  'SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE',
] as const satisfies ReadonlyArray<keyof RawSettings>;
const BROKER_SETTINGS = [
  'SVC_RELAY_IDENTITY_BROKER_CLIENT_ID',
  'SVC_RELAY_IDENTITY_BROKER_CA_FILE',
  'SVC_RELAY_IDENTITY_BROKER_ADMIN_ENDPOINT',
] as const satisfies ReadonlyArray<keyof RawSettings>;
/** What the broker form derives (issuer, key set, client id, CA): given beside it, they would be ignored. */
const REPLACED_BY_BROKER = [
  'SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER',
  'SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID',
  'SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL',
  'SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE',
] as const satisfies ReadonlyArray<keyof RawSettings>;

function authorityFrom(s: RawSettings): AuthorityConfig | undefined {
  const broker = s.SVC_RELAY_IDENTITY_BROKER_ENDPOINT;
  // a setting the relay would silently ignore leaves the admin route refusing every token
  const given = (names: ReadonlyArray<keyof RawSettings>) => names.filter((name) => s[name] !== undefined);
  if (broker) {
    const ignored = given(REPLACED_BY_BROKER);
    if (ignored.length > 0) {
      fail(
        `${ignored.join(', ')} cannot be set with SVC_RELAY_IDENTITY_BROKER_ENDPOINT (the broker form derives the issuer, key set and client id); set one form`,
      );
    }
    const base = requireHttps('SVC_RELAY_IDENTITY_BROKER_ENDPOINT', broker).replace(/\/+$/, '');
    const clientId =
      s.SVC_RELAY_IDENTITY_BROKER_CLIENT_ID ??
      fail('SVC_RELAY_IDENTITY_BROKER_CLIENT_ID is required with the identity broker');
    const audience =
      s.SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE ??
      fail('SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE is required (the relay API audience)');
    return {
      issuer: `${base}/oidc`,
      jwksUrl: `${base}/oidc/jwks`,
      audience,
      clientId,
      caPem: readCa('SVC_RELAY_IDENTITY_BROKER_CA_FILE', s.SVC_RELAY_IDENTITY_BROKER_CA_FILE),
    };
  }
  const orphans = given(BROKER_SETTINGS);
  if (orphans.length > 0) fail(`${orphans.join(', ')} needs SVC_RELAY_IDENTITY_BROKER_ENDPOINT`);
  const issuer = s.SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER;
  if (!issuer) {
    const unused = given(ISSUER_SETTINGS);
    if (unused.length > 0) {
      fail(
        `${unused.join(', ')} needs SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER (or SVC_RELAY_IDENTITY_BROKER_ENDPOINT); without an issuer the relay refuses every administrator token`,
      );
    }
    return undefined;
  }
  requireHttps('SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER', issuer);
  const jwksUrl = s.SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL;
  if (jwksUrl) requireHttps('SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL', jwksUrl);
  return {
    issuer,
    jwksUrl,
    audience:
      s.SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE ??
      fail('SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE is required with an issuer'),
    clientId:
      s.SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID ??
      fail('SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID is required with an issuer (the azp the relay accepts)'),
    caPem: readCa('SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE', s.SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE),
  };
}

/** pino's levels (the relay defines none of its own). */
const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** 100 years: every expiry it gives is a date (a larger one broke enrollment and sign-in with a 500). */
export const API_KEY_TTL_MAX_SECONDS = 100 * 365 * 24 * 3600;

function apiKeyTtlFrom(raw: string | undefined): number {
  if (raw === undefined) return 90 * 24 * 3600;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < 1 || n > API_KEY_TTL_MAX_SECONDS) {
    fail(
      `SVC_RELAY_API_KEY_TTL_SECONDS must be a whole number of seconds from 1 to ${API_KEY_TTL_MAX_SECONDS} (got "${raw}")`,
    );
  }
  return n;
}

/** An external NATS is reached as its operator: without both files the bus cannot start. */
function natsFiles(s: RawSettings): void {
  if (!s.SVC_RELAY_NATS_URL) {
    // the managed nats-server writes its own: given without the URL, they would be ignored
    const given = (['SVC_RELAY_NATS_OPERATOR_SEED_FILE', 'SVC_RELAY_NATS_SYSTEM_CREDS_FILE'] as const).filter(
      (name) => s[name],
    );
    if (given.length > 0) {
      fail(
        `${given.join(' and ')} ${given.length > 1 ? 'are' : 'is'} for an external NATS and needs SVC_RELAY_NATS_URL; the managed nats-server has its own (leave ${given.length > 1 ? 'them' : 'it'} out, or set SVC_RELAY_NATS_URL)`,
      );
    }
    return;
  }
  const missing = (['SVC_RELAY_NATS_OPERATOR_SEED_FILE', 'SVC_RELAY_NATS_SYSTEM_CREDS_FILE'] as const).filter(
    (name) => !s[name],
  );
  if (missing.length > 0) {
    fail(`SVC_RELAY_NATS_URL needs ${missing.join(' and ')} (\`svc-relay nats operator-init --dir DIR\` writes them)`);
  }
}

export function buildConfig(s: RawSettings): RelayConfig {
  const { host, port } = parseListen(s.SVC_RELAY_LISTEN ?? '127.0.0.1:8787');
  const hostForUrl = isIP(host) === 6 ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const publicUrl = (s.SVC_RELAY_PUBLIC_URL ?? `http://${hostForUrl}:${port}`).replace(/\/+$/, '');
  try {
    const u = new URL(publicUrl);
    if (u.protocol !== 'https:' && u.protocol !== 'http:')
      fail(`SVC_RELAY_PUBLIC_URL must be an http:// or https:// URL (got "${publicUrl}")`);
  } catch (err) {
    if (err instanceof SvcError) throw err;
    fail(`SVC_RELAY_PUBLIC_URL is not a URL: ${publicUrl}`);
  }
  const tenants = (s.SVC_RELAY_TENANTS ?? 'default')
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (tenants.length === 0) fail('SVC_RELAY_TENANTS must name at least one tenant');
  for (const t of tenants) {
    if (!TENANT_ID_PATTERN.test(t)) {
      fail(`invalid tenant id "${t}" (a letter or digit, then letters, digits, _ . -; at most 64)`);
    }
  }
  natsFiles(s);
  const ledgerDsnFile = s.SVC_RELAY_LEDGER_DSN_FILE === '' ? undefined : s.SVC_RELAY_LEDGER_DSN_FILE;
  const deploymentId = s.SVC_RELAY_DEPLOYMENT_ID;
  if (deploymentId !== undefined && !/^[A-Za-z0-9_.-]{1,128}$/.test(deploymentId)) {
    fail(`invalid SVC_RELAY_DEPLOYMENT_ID "${deploymentId}" (letters, digits, _ . -; at most 128)`);
  }
  const ttl = apiKeyTtlFrom(s.SVC_RELAY_API_KEY_TTL_SECONDS);
  const logLevel = s.SVC_RELAY_LOG_LEVEL ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    fail(`SVC_RELAY_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${logLevel}")`);
  }
  const allow = s.SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS ?? '0';
  if (allow !== '0' && allow !== '1') fail('SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS must be 0 or 1');
  return {
    host,
    port,
    publicUrl,
    dataDir: resolve(s.SVC_RELAY_DATA_DIR ?? './.svc-relay'),
    ledgerDsnFile: ledgerDsnFile === undefined ? undefined : resolve(ledgerDsnFile),
    deploymentId,
    tenants,
    defaultTenant: tenants[0] as string,
    nats: {
      url: s.SVC_RELAY_NATS_URL,
      serverBin: s.SVC_RELAY_NATS_SERVER_BIN ?? 'nats-server',
      operatorSeedFile: s.SVC_RELAY_NATS_OPERATOR_SEED_FILE,
      systemCredsFile: s.SVC_RELAY_NATS_SYSTEM_CREDS_FILE,
      streamReplicas: streamReplicasFrom(s),
      leafListen: hostPortFrom('SVC_RELAY_LEAF_LISTEN', s.SVC_RELAY_LEAF_LISTEN),
      leafAdvertise: hostPortFrom('SVC_RELAY_LEAF_ADVERTISE', s.SVC_RELAY_LEAF_ADVERTISE) && s.SVC_RELAY_LEAF_ADVERTISE,
    },
    authority: authorityFrom(s),
    allowPrivateWebhooks: allow === '1',
    webhookCaPem: readCa('SVC_RELAY_WEBHOOK_CA_FILE', s.SVC_RELAY_WEBHOOK_CA_FILE),
    webhooks: WEBHOOK_TIMING,
    apiKeyTtlSeconds: ttl,
    logLevel,
    trustedProxies: trustedProxiesFrom(s.SVC_RELAY_TRUSTED_PROXIES),
    limits: limitsFrom(s),
    retiredSettings: RETIRED_SETTINGS.filter((name) => s[name] !== undefined),
    // every interface, and no public URL: what clients are told is this machine's own address
    startWarnings:
      s.SVC_RELAY_PUBLIC_URL === undefined && (host === '0.0.0.0' || host === '::')
        ? [
            `SVC_RELAY_LISTEN ${s.SVC_RELAY_LISTEN} takes connections from other machines, but without SVC_RELAY_PUBLIC_URL the relay gives clients ${publicUrl} (in its deployment document and enrollment codes), which they cannot reach: set SVC_RELAY_PUBLIC_URL to the URL they use`,
          ]
        : [],
  };
}
