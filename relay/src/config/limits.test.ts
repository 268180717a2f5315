import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig, DEFAULT_LIMITS } from './config.js';
import { settingsFromFile } from './env.js';

describe('rate limit and quota settings', () => {
  it('have defaults, and each can be set (0 = no limit)', () => {
    expect(buildConfig({}).limits).toEqual(DEFAULT_LIMITS);
    const c = buildConfig({
      SVC_RELAY_AUTH_RATE_PER_ADDRESS: '0',
      SVC_RELAY_AUTH_RATE_PER_AGENT: '7',
      SVC_RELAY_SEND_RATE_PER_AGENT: '5',
      SVC_RELAY_SEND_BURST_PER_AGENT: '10',
      SVC_RELAY_RECIPIENT_MAX_PENDING: '3',
      SVC_RELAY_RECIPIENT_MAX_PENDING_BYTES: '4096',
      SVC_RELAY_TENANT_MAX_MESSAGES: '100',
      SVC_RELAY_TENANT_MAX_BYTES: '0',
      SVC_RELAY_STREAMS_PER_AGENT: '3',
      SVC_RELAY_BLOB_MAX_BYTES: '1024',
      SVC_RELAY_TENANT_MAX_BLOB_BYTES: '0',
      SVC_RELAY_AGENT_MAX_BLOB_BYTES: '0',
      SVC_RELAY_SOURCES_PER_TENANT: '4',
      SVC_RELAY_SOURCES_PER_EDGE: '2',
      SVC_RELAY_TENANT_MAX_CONSUMERS: '8',
      SVC_RELAY_LEAF_CREDS_TTL_SECONDS: '60',
    });
    expect(c.limits).toEqual({
      authPerAddressPerMinute: 0,
      authPerAgentPerMinute: 7,
      sendPerAgentPerSecond: 5,
      sendBurstPerAgent: 10,
      recipientMaxPending: 3,
      recipientMaxPendingBytes: 4096,
      tenantMaxMessages: 100,
      tenantMaxBytes: 0,
      streamsPerAgent: 3,
      blobMaxBytes: 1024,
      tenantMaxBlobBytes: 0,
      agentMaxBlobBytes: 0,
      sourcesPerTenant: 4,
      sourcesPerEdge: 2,
      tenantMaxConsumers: 8,
      leafCredsTtlSeconds: 60,
    });
  });

  it('refuses what is not a whole number, and a 0 where it would deny everything', () => {
    expect(() => buildConfig({ SVC_RELAY_SEND_RATE_PER_AGENT: '1.5' })).toThrow(
      /SVC_RELAY_SEND_RATE_PER_AGENT must be an integer/,
    );
    expect(() => buildConfig({ SVC_RELAY_TENANT_MAX_BYTES: '-1' })).toThrow(/TENANT_MAX_BYTES/);
    // retired settings are taken (a configuration that sets them starts) and named, nothing more
    const retired = buildConfig({ SVC_RELAY_CHALLENGES_MAX: '0', SVC_RELAY_CHALLENGES_PER_AGENT: 'x' });
    expect(retired.retiredSettings.sort()).toEqual(['SVC_RELAY_CHALLENGES_MAX', 'SVC_RELAY_CHALLENGES_PER_AGENT']);
    expect(retired.limits).toEqual(DEFAULT_LIMITS);
    expect(buildConfig({}).retiredSettings).toEqual([]);
  });

  it('warns of every interface without a public URL: clients would be given the loopback address', () => {
    const [warning, ...more] = buildConfig({ SVC_RELAY_LISTEN: '0.0.0.0:8789' }).startWarnings;
    expect(more).toEqual([]);
    expect(warning).toBe(
      'SVC_RELAY_LISTEN 0.0.0.0:8789 takes connections from other machines, but without SVC_RELAY_PUBLIC_URL the relay gives clients http://127.0.0.1:8789 (in its deployment document and enrollment codes), which they cannot reach: set SVC_RELAY_PUBLIC_URL to the URL they use',
    );
    expect(buildConfig({ SVC_RELAY_LISTEN: '[::]:8789' }).startWarnings).toHaveLength(1);
    expect(
      buildConfig({ SVC_RELAY_LISTEN: '0.0.0.0:8789', SVC_RELAY_PUBLIC_URL: 'https://relay.example' }).startWarnings,
    ).toEqual([]);
    expect(buildConfig({ SVC_RELAY_LISTEN: '127.0.0.1:8789' }).startWarnings).toEqual([]);
    // a blob limit of "none" would let one upload hold the relay's memory
    expect(() => buildConfig({ SVC_RELAY_BLOB_MAX_BYTES: '0' })).toThrow(
      /SVC_RELAY_BLOB_MAX_BYTES must be an integer ≥ 1/,
    );
    // an edge's uplink account JWT must fit one NATS message (uplink-accounts.test.ts measures it)
    expect(buildConfig({ SVC_RELAY_SOURCES_PER_EDGE: '120' }).limits.sourcesPerEdge).toBe(120);
    expect(() => buildConfig({ SVC_RELAY_SOURCES_PER_EDGE: '121' })).toThrow(
      /SVC_RELAY_SOURCES_PER_EDGE must be at most 120/,
    );
    // a consumer cap of 0 would deny every consumer
    expect(() => buildConfig({ SVC_RELAY_TENANT_MAX_CONSUMERS: '0' })).toThrow(/≥ 1/);
    expect(() => buildConfig({ SVC_RELAY_LEAF_LISTEN: 'nowhere' })).toThrow(/SVC_RELAY_LEAF_LISTEN must be host:port/);
    expect(buildConfig({ SVC_RELAY_LEAF_LISTEN: '[::1]:7422' }).nats.leafListen).toEqual({ host: '::1', port: 7422 });
  });

  it('trusted proxies are addresses or CIDR ranges', () => {
    expect(buildConfig({}).trustedProxies).toEqual([]);
    expect(buildConfig({ SVC_RELAY_TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8' }).trustedProxies).toEqual([
      '127.0.0.1',
      '10.0.0.0/8',
      '::1',
      'fd00::/8',
    ]);
    expect(() => buildConfig({ SVC_RELAY_TRUSTED_PROXIES: 'proxy.local' })).toThrow(/TRUSTED_PROXIES/);
    expect(() => buildConfig({ SVC_RELAY_TRUSTED_PROXIES: '10.0.0.0/33' })).toThrow(/TRUSTED_PROXIES/);
  });

  it('are read from the config file under their lower-case names', () => {
    const file = join(tmpdir(), `svc-limits-${process.pid}.json`);
    writeFileSync(file, JSON.stringify({ svc_relay_recipient_max_pending: 9 }));
    expect(buildConfig(settingsFromFile(file)).limits.recipientMaxPending).toBe(9);
  });
});
