/**
 * The relay built by createRelay, in this process, for route tests through app.inject():
 * not listening, with a message bus that is down (the message routes answer 503
 * bus_unavailable, revocation cleanups stay pending). Tests that need the bus use
 * the in-process-bus entry, which starts a real nats-server. Its ledger is the run's test
 * ledger (./test-ledger.ts).
 */

import {
  type AdminAuthorityConfig,
  buildConfig,
  createRelay,
  mintGrant,
  type RawSettings,
  type RelayBus,
  type RelayConfig,
  type RelayContext,
  type TypedApp,
} from '@svc/relay';
import type { LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { enrollmentBody, newIdentity, type TestIdentity } from './agent-client.js';
import { tempDir } from './index.js';
import { ledgerEnv } from './test-ledger.js';

export interface InProcessAgent {
  identity: TestIdentity;
  tenant: string;
  agentId: string;
  agentNumber: string;
  token: string;
}

export type InjectMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface InProcessRelay {
  /** mints a grant and redeems it through the enrollment route */
  enroll(
    tenant: string,
    agentId: string,
    opts?: { agentNumber?: string; displayName?: string },
  ): Promise<InProcessAgent>;
  /** an agent request with its access token */
  api(token: string, method: InjectMethod, url: string, payload?: unknown): Promise<LightMyRequestResponse>;
  app: TypedApp;
  ctx: RelayContext;
  config: RelayConfig;
  logLines: string[];
  /** shift the relay's clock */
  advance(ms: number): void;
  close(): Promise<void>;
}

/** A message bus that is down: every operation fails as an unreachable NATS would. */
const down = (): Promise<never> => Promise.reject(new Error('no message bus in route tests'));
const busDown: RelayBus = {
  tenantConnection: down,
  revokeUsers: down,
  mintUserCreds: down,
  publishUplink: down,
  mintUplinkCreds: down,
  mintedInTenant: down,
  leafUrl: undefined,
  health: async () => ({ ok: false, detail: 'no message bus' }),
  close: async () => undefined,
  blobQuota: 0,
  streamReplicas: 1,
};

export async function inProcessRelay(
  opts: {
    tenants?: string[];
    authority?: Omit<AdminAuthorityConfig, 'deploymentId' | 'tenants'>;
    deploymentId?: string;
    /** further settings (limits …) */
    settings?: RawSettings;
    /** the relay's clock stands still but for advance(): counts over time (rate limits) are exact */
    fixedClock?: boolean;
  } = {},
): Promise<InProcessRelay> {
  const dataDir = tempDir('svc-relay-inproc-');
  const tenants = opts.tenants ?? ['default'];
  const config = buildConfig({
    SVC_RELAY_DATA_DIR: dataDir,
    SVC_RELAY_TENANTS: tenants.join(','),
    SVC_RELAY_LISTEN: '127.0.0.1:8787',
    ...(opts.deploymentId ? { SVC_RELAY_DEPLOYMENT_ID: opts.deploymentId } : {}),
    ...(await ledgerEnv(dataDir, opts.settings)),
    ...opts.settings,
  });
  const logLines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
  let offset = 0;
  const start = Date.now();
  const relay = await createRelay(
    opts.authority ? { ...config, authority: { jwksUrl: undefined, caPem: undefined, ...opts.authority } } : config,
    {
      logger,
      now: () => (opts.fixedClock ? start : Date.now()) + offset,
      autoInitDeployment: true,
      bus: busDown,
    },
  );
  const { app, context: ctx } = relay;
  return {
    async enroll(tenant, agentId, enrollOpts = {}) {
      const grant = await mintGrant(ctx, {
        tenantId: tenant,
        agentId,
        agentNumber: enrollOpts.agentNumber,
        capabilities: ['http-relay'],
        createdBy: 'test',
      });
      const identity = newIdentity();
      const body = enrollmentBody(grant.enrollment_code, identity);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/enrollment',
        payload: enrollOpts.displayName === undefined ? body : { ...body, display_name: enrollOpts.displayName },
      });
      if (res.statusCode !== 201) throw new Error(`enrollment of ${agentId} failed: ${res.statusCode} ${res.body}`);
      return { identity, tenant, agentId, agentNumber: grant.agent_number, token: res.json().access_token as string };
    },
    api: (token, method, url, payload) =>
      app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${token}` },
        ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
      }),
    app,
    ctx,
    config,
    logLines,
    advance: (ms) => {
      offset += ms;
    },
    close: () => relay.close(),
  };
}
