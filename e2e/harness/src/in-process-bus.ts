/**
 * The whole relay in this process (createRelay + start: ledger, a real managed nats-server,
 * the HTTP server on a free loopback port) with settings of the test's choosing, and agents enrolled
 * through the real enrollment route. Its ledger is the run's test ledger (./test-ledger.ts).
 */

import { buildConfig, createRelay, mintGrant, type RawSettings, type Relay, type RelayOverrides } from '@svc/relay';
import type { Capability } from '@svc/shared';
import { pino } from 'pino';
import { enrollAgent, type TestAgent } from './agent-client.js';
import { freePort, tempDir } from './index.js';
import { ledgerEnv } from './test-ledger.js';

export interface BusRelay {
  relay: Relay;
  url: string;
  dataDir: string;
  logLines: string[];
  /** shift the relay's clock */
  advance(ms: number): void;
  /** a single-use enrollment code for `agentId`, as the operator's grant mints it */
  grant(agentId: string, tenant?: string, capabilities?: Capability[]): Promise<string>;
  enroll(agentId: string, tenant?: string, capabilities?: Capability[]): Promise<TestAgent>;
  close(): Promise<void>;
}

export async function inProcessBusRelay(
  settings: RawSettings = {},
  overrides: Omit<RelayOverrides, 'logger' | 'now' | 'autoInitDeployment'> = {},
): Promise<BusRelay> {
  const dataDir = settings.SVC_RELAY_DATA_DIR ?? tempDir('svc-relay-bus-');
  const config = buildConfig({
    SVC_RELAY_DATA_DIR: dataDir,
    SVC_RELAY_LISTEN: `127.0.0.1:${await freePort()}`,
    ...(await ledgerEnv(dataDir, settings)),
    ...settings,
  });
  const logLines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
  let offset = 0;
  const relay = await createRelay(config, {
    ...overrides,
    logger,
    autoInitDeployment: true,
    now: () => Date.now() + offset,
  });
  try {
    await relay.start();
  } catch (err) {
    await relay.close();
    throw err;
  }
  const url = `http://127.0.0.1:${config.port}`;
  const grant = async (agentId: string, tenant = config.defaultTenant, capabilities: Capability[] = ['http-relay']) =>
    (await mintGrant(relay.context, { tenantId: tenant, agentId, capabilities, createdBy: 'test' })).enrollment_code;
  return {
    relay,
    url,
    dataDir,
    logLines,
    advance: (ms) => {
      offset += ms;
    },
    grant,
    enroll: async (agentId, tenant, capabilities) => enrollAgent(url, await grant(agentId, tenant, capabilities)),
    close: () => relay.close(),
  };
}
