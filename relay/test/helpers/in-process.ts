/** An in-process relay app (no bus) for route tests through app.inject(). */
import type { LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { type AdminAuthorityConfig, createAdminTokenVerifier } from '../../src/auth/admin-token.js';
import { buildConfig, type RelayConfig } from '../../src/config/config.js';
import type { RawSettings } from '../../src/config/env.js';
import type { RelayContext } from '../../src/context.js';
import { initDeployment } from '../../src/deployment/deployment.js';
import { Ledger } from '../../src/ledger/ledger.js';
import type { TypedApp } from '../../src/routes/types.js';
import { mintGrant } from '../../src/services/grants.js';
import { enrollmentBody, newIdentity, type TestIdentity } from './agent-client.js';
import { tempDir } from './relay-process.js';

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

export async function inProcessRelay(
  opts: {
    tenants?: string[];
    authority?: Omit<AdminAuthorityConfig, 'deploymentId' | 'tenants'>;
    deploymentId?: string;
    /** further settings (limits …) */
    settings?: RawSettings;
  } = {},
): Promise<InProcessRelay> {
  const dataDir = tempDir('svc-relay-inproc-');
  const tenants = opts.tenants ?? ['default'];
  const config = buildConfig({
    SVC_RELAY_DATA_DIR: dataDir,
    SVC_RELAY_TENANTS: tenants.join(','),
    SVC_RELAY_LISTEN: '127.0.0.1:8787',
    ...(opts.deploymentId ? { SVC_RELAY_DEPLOYMENT_ID: opts.deploymentId } : {}),
    ...opts.settings,
  });
  const deployment = await initDeployment(dataDir, {
    deploymentId: config.deploymentId,
    publicUrl: config.publicUrl,
    tenants,
  });
  const ledger = Ledger.open(`${dataDir}/ledger.db`);
  const logLines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
  let offset = 0;
  const ctx: RelayContext = {
    config,
    deployment,
    ledger,
    bus: undefined,
    adminVerifier: opts.authority
      ? createAdminTokenVerifier({ ...opts.authority, deploymentId: deployment.deploymentId, tenants }, logger)
      : undefined,
    logger,
    now: () => Date.now() + offset,
  };
  const app = await buildApp(ctx);
  await app.ready();
  return {
    async enroll(tenant, agentId, enrollOpts = {}) {
      const grant = mintGrant(ctx, {
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
    close: async () => {
      await app.close();
      ledger.close();
    },
  };
}
