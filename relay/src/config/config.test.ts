import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SvcError } from '@svc/shared';
import { describe, expect, it } from 'vitest';
import { buildConfig } from './config.js';
import { mergeSettings, SETTINGS, settingsFromEnv, settingsFromFile } from './env.js';

const authority = {
  SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: 'https://idp.example',
  SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example/api',
  SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: 'app-1',
};

describe('relay configuration', () => {
  it('refuses a public URL that is not http(s), echoing it as the other settings do', () => {
    expect(() => buildConfig({ SVC_RELAY_PUBLIC_URL: 'ftp://x' })).toThrow(
      'SVC_RELAY_PUBLIC_URL must be an http:// or https:// URL (got "ftp://x")',
    );
  });

  it('has embedded defaults for one machine', () => {
    const c = buildConfig({});
    expect(c).toMatchObject({
      host: '127.0.0.1',
      port: 8787,
      publicUrl: 'http://127.0.0.1:8787',
      tenants: ['default'],
      defaultTenant: 'default',
      authority: undefined,
      allowPrivateWebhooks: false,
    });
    expect(c.dataDir.endsWith('.svc-relay')).toBe(true);
  });

  it('refuses non-https issuer and key-set URLs when it is built', () => {
    expect(() => buildConfig({ ...authority, SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: 'http://idp.example' })).toThrow(
      /ISSUER must be an https URL/,
    );
    expect(() =>
      buildConfig({ ...authority, SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL: 'http://idp.example/jwks' }),
    ).toThrow(/JWKS_URL must be an https URL/);
    expect(() =>
      buildConfig({ SVC_RELAY_IDENTITY_BROKER_ENDPOINT: 'http://broker', SVC_RELAY_IDENTITY_BROKER_CLIENT_ID: 'x' }),
    ).toThrow(/https/);
  });

  it('derives the broker form: issuer = ENDPOINT/oidc, keys = ENDPOINT/oidc/jwks', () => {
    const c = buildConfig({
      SVC_RELAY_IDENTITY_BROKER_ENDPOINT: 'https://broker.example/',
      SVC_RELAY_IDENTITY_BROKER_CLIENT_ID: 'spa-1',
      SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example/api',
    });
    expect(c.authority).toMatchObject({
      issuer: 'https://broker.example/oidc',
      jwksUrl: 'https://broker.example/oidc/jwks',
      clientId: 'spa-1',
    });
  });

  it('requires audience and client id with an issuer', () => {
    expect(() => buildConfig({ SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: 'https://idp.example' })).toThrow(/AUDIENCE/);
  });

  it('stream replicas: 1 by default, 1–5 with an external NATS, only 1 on the managed server', () => {
    expect(buildConfig({}).nats.streamReplicas).toBe(1);
    const external = {
      SVC_RELAY_NATS_URL: 'nats://a:4222,nats://b:4222,nats://c:4222',
      SVC_RELAY_NATS_OPERATOR_SEED_FILE: '/etc/svc/operator.nk',
      SVC_RELAY_NATS_SYSTEM_CREDS_FILE: '/etc/svc/sys.creds',
    };
    expect(buildConfig({ ...external, SVC_RELAY_STREAM_REPLICAS: '3' }).nats.streamReplicas).toBe(3);
    for (const bad of ['0', '6', '2.5', 'three', '-1']) {
      expect(() => buildConfig({ ...external, SVC_RELAY_STREAM_REPLICAS: bad })).toThrow(
        /SVC_RELAY_STREAM_REPLICAS must be an integer from 1 to 5/,
      );
    }
    expect(() => buildConfig({ SVC_RELAY_STREAM_REPLICAS: '3' })).toThrow(
      /needs a NATS cluster \(SVC_RELAY_NATS_URL\)/,
    );
    expect(buildConfig({ SVC_RELAY_STREAM_REPLICAS: '1' }).nats.streamReplicas).toBe(1);
  });

  it('validates listen, tenants and flags', () => {
    expect(() => buildConfig({ SVC_RELAY_LISTEN: 'nope' })).toThrow(/host:port/);
    expect(() => buildConfig({ SVC_RELAY_TENANTS: 'ok,bad tenant' })).toThrow(/tenant/);
    expect(() => buildConfig({ SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS: 'yes' })).toThrow(/0 or 1/);
    expect(buildConfig({ SVC_RELAY_TENANTS: 'acme, globex' }).tenants).toEqual(['acme', 'globex']);
    expect(buildConfig({ SVC_RELAY_LISTEN: '[::1]:9000' }).publicUrl).toBe('http://[::1]:9000');
  });

  it('layers environment, then config file (lower-case keys), then flags', () => {
    const file = join(tmpdir(), `svc-relay-config-${process.pid}.json`);
    writeFileSync(file, JSON.stringify({ svc_relay_tenants: ['a', 'b'], svc_relay_listen: '127.0.0.1:9001' }));
    const env = settingsFromEnv({ SVC_RELAY_LISTEN: '127.0.0.1:9000', SVC_RELAY_TENANTS: 'x', UNRELATED: '1' });
    const merged = mergeSettings(env, settingsFromFile(file), { SVC_RELAY_LISTEN: '127.0.0.1:9002' });
    expect(buildConfig(merged)).toMatchObject({ port: 9002, tenants: ['a', 'b'] });
    writeFileSync(file, JSON.stringify({ svc_relay_lisen: 'typo' }));
    expect(() => settingsFromFile(file)).toThrow(
      /unknown setting "svc_relay_lisen" \(did you mean "svc_relay_listen"\?\)/,
    );
  });
});

describe('unknown SVC_RELAY_* variables in the environment', () => {
  /** The config_invalid refusal settingsFromEnv throws for `env`. */
  const refusal = (env: NodeJS.ProcessEnv): SvcError => {
    let caught: unknown;
    try {
      settingsFromEnv(env);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SvcError);
    expect((caught as SvcError).code).toBe('config_invalid');
    expect((caught as SvcError).message).not.toContain('\n');
    return caught as SvcError;
  };

  it.each([
    ['SVC_RELAY_AGENT_MAX_BLOB_BYTE', 'SVC_RELAY_AGENT_MAX_BLOB_BYTES'],
    ['SVC_RELAY_LEDGER_DNS_FILE', 'SVC_RELAY_LEDGER_DSN_FILE'],
    ['SVC_RELAY_LISEN', 'SVC_RELAY_LISTEN'],
    ['SVC_RELAY_TENANT', 'SVC_RELAY_TENANTS'],
    ['SVC_RELAY_EXTERNAL_AUTHORITY_CLIENTID', 'SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID'],
    ['svc_relay_data_dir', 'SVC_RELAY_DATA_DIR'],
  ])('%s is refused at start, naming it and the near setting %s', (name, near) => {
    const error = refusal({ SVC_RELAY_TENANTS: 'acme', [name]: '1', PATH: '/usr/bin' });
    expect(error.message).toBe(
      `unknown setting in the environment: ${name} (did you mean ${near}?); rename or unset it (the settings are listed in docs/operators.md)`,
    );
  });

  it('a name near no setting is named without a guess; several are named together, even empty ones', () => {
    expect(refusal({ SVC_RELAY_COLOUR: 'blue' }).message).toBe(
      'unknown setting in the environment: SVC_RELAY_COLOUR; rename or unset it (the settings are listed in docs/operators.md)',
    );
    expect(refusal({ SVC_RELAY_LOG_LEVL: 'debug', SVC_RELAY_: '', SVC_RELAY_NATS_SERVER: '' }).message).toBe(
      'unknown settings in the environment: SVC_RELAY_, SVC_RELAY_LOG_LEVL (did you mean SVC_RELAY_LOG_LEVEL?), SVC_RELAY_NATS_SERVER; rename or unset them (the settings are listed in docs/operators.md)',
    );
  });

  it('a known setting set but empty is refused, naming it (an unset shell variable expanded)', () => {
    expect(refusal({ SVC_RELAY_LEDGER_DSN_FILE: '', PATH: '/usr/bin' }).message).toBe(
      'SVC_RELAY_LEDGER_DSN_FILE is set but empty: unset it for the default, or give a value',
    );
    expect(refusal({ SVC_RELAY_NATS_URL: '', SVC_RELAY_LISTEN: '', SVC_RELAY_TENANTS: 'acme' }).message).toBe(
      'SVC_RELAY_LISTEN, SVC_RELAY_NATS_URL are set but empty: unset them for the defaults, or give values',
    );
  });

  it('a deployment id of the wrong form says what the form is', () => {
    expect(() => buildConfig(settingsFromEnv({ SVC_RELAY_DEPLOYMENT_ID: 'bad id' }))).toThrow(
      'invalid SVC_RELAY_DEPLOYMENT_ID "bad id" (letters, digits, _ . -; at most 128)',
    );
  });

  it('a known setting empty in a config file is refused the same way', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-relay-config-')), 'relay.json');
    writeFileSync(file, JSON.stringify({ svc_relay_ledger_dsn_file: '' }));
    expect(() => settingsFromFile(file)).toThrow(
      `config file ${file}: "svc_relay_ledger_dsn_file" is set but empty: remove it for the default, or give a value`,
    );
  });

  it('every setting, retired ones included, and variables outside the prefix are accepted', () => {
    const env = Object.fromEntries(SETTINGS.map((name) => [name, 'x']));
    expect(
      Object.keys(settingsFromEnv({ ...env, SVC_RELAYS: '1', SVC_TEST_LEDGER: 'postgres', X_SVC_RELAY_Y: '1' })),
    ).toHaveLength(SETTINGS.length);
  });
});
