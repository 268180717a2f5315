/**
 * Bad settings as an operator gives them to the real `svc-relay` binary: each is refused
 * before anything starts, with one line naming the setting, `config_invalid` and exit
 * status 2 (docs/operators.md, "Settings"). The data dir holds no deployment, so a
 * setting that is not refused would show as the "no deployment" line instead.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, tempDir } from '@svc/test-harness';
import { runRelayCli } from '@svc/test-harness/relay-process';
import { describe, expect, it } from 'vitest';

const dataDir = tempDir('svc-relay-settings-');
const notPem = join(dataDir, 'not-a-ca.pem');
writeFileSync(notPem, 'this is not a certificate\n');

/** `serve` with these settings over a bare environment (no SVC_RELAY_* of the test run). */
async function refusal(env: Record<string, string>, args: string[] = []) {
  const r = await runRelayCli(['serve', ...args], { SVC_RELAY_DATA_DIR: dataDir, ...env }, { bare: true });
  return { code: r.code, stdout: r.stdout, lines: r.stderr.trimEnd().split('\n') };
}

function expectRefusedNaming(r: Awaited<ReturnType<typeof refusal>>, setting: string) {
  expect(r.lines, r.lines.join('\n')).toHaveLength(1);
  const line = r.lines[0] as string;
  expect(line).toMatch(/^svc-relay: error: .* \(config_invalid\)$/);
  expect(line).toContain(setting);
  expect(line).not.toContain('no deployment');
  expect(r.code).toBe(2);
}

describe('settings refused at start, naming the setting', () => {
  it.each([
    ['SVC_RELAY_LOG_LEVEL', { SVC_RELAY_LOG_LEVEL: 'verbose' }, []],
    // given by its flag, the flag is named
    ['--log-level', {}, ['--log-level', 'chatty']],
  ])('%s not a log level (%j %j)', async (setting, env, args) => {
    expectRefusedNaming(await refusal(env, args), setting);
  });

  it.each(['1e300', '100000000000000', '0x10', '1e3'])(
    'SVC_RELAY_API_KEY_TTL_SECONDS=%s (an expiry no date can hold, or not a whole number of seconds)',
    async (ttl) => {
      expectRefusedNaming(await refusal({ SVC_RELAY_API_KEY_TTL_SECONDS: ttl }), 'SVC_RELAY_API_KEY_TTL_SECONDS');
    },
  );

  it.each([
    ['SVC_RELAY_AGENT_MAX_BLOB_BYTE', 'SVC_RELAY_AGENT_MAX_BLOB_BYTES'],
    ['SVC_RELAY_LEDGER_DNS_FILE', 'SVC_RELAY_LEDGER_DSN_FILE'],
  ])('%s, a misspelled setting in the environment (did you mean %s?)', async (name, near) => {
    const r = await refusal({ [name]: '1' });
    expectRefusedNaming(r, name);
    expect(r.lines[0]).toContain(`(did you mean ${near}?)`);
  });

  it('a misspelled setting in the environment of a local operator command too', async () => {
    const r = await runRelayCli(
      ['grant', '--agent-id', 'a', '--data-dir', dataDir],
      { SVC_RELAY_DATA_DIRS: dataDir },
      { bare: true },
    );
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toBe(
      'svc-relay: error: unknown setting in the environment: SVC_RELAY_DATA_DIRS (did you mean SVC_RELAY_DATA_DIR?); rename or unset it (the settings are listed in docs/operators.md) (config_invalid)\n',
    );
  });

  it('SVC_RELAY_NATS_URL without the operator seed and system creds files names both', async () => {
    const r = await refusal({ SVC_RELAY_NATS_URL: 'nats://127.0.0.1:4222' });
    expectRefusedNaming(r, 'SVC_RELAY_NATS_OPERATOR_SEED_FILE');
    expect(r.lines[0]).toContain('SVC_RELAY_NATS_SYSTEM_CREDS_FILE');
  });

  it('the operator files of an external NATS without SVC_RELAY_NATS_URL (they were ignored)', async () => {
    const r = await refusal({ SVC_RELAY_NATS_OPERATOR_SEED_FILE: notPem });
    expectRefusedNaming(r, 'SVC_RELAY_NATS_OPERATOR_SEED_FILE is for an external NATS and needs SVC_RELAY_NATS_URL');
  });

  it('a data dir whose relays use an external NATS refuses a relay on a managed nats-server, changing nothing', async () => {
    const shared = tempDir('svc-relay-shared-');
    expect((await runRelayCli(['deployment', 'init', '--data-dir', shared], {}, { bare: true })).code).toBe(0);
    // what a relay of the cluster records once it listens
    const recorded = join(shared, 'relay-settings.json');
    const settings = `${JSON.stringify({ public_url: 'http://127.0.0.1:8801', tenants: ['default'], nats_url: 'nats://127.0.0.1:4222' })}\n`;
    writeFileSync(recorded, settings);
    const document = readFileSync(join(shared, 'deployment', 'document.jws'), 'utf8');
    const r = await runRelayCli(['serve', '--data-dir', shared, '--listen', '127.0.0.1:0'], {}, { bare: true });
    expect(r.stderr).toBe(
      `svc-relay: error: the relays of ${shared} use the external NATS at nats://127.0.0.1:4222 (${recorded}): set SVC_RELAY_NATS_URL and its operator files to run another of them; to run this data dir on a managed nats-server instead, remove ${recorded} first (config_invalid)\n`,
    );
    expect(r.code).toBe(2);
    expect(readFileSync(recorded, 'utf8')).toBe(settings);
    expect(readFileSync(join(shared, 'deployment', 'document.jws'), 'utf8')).toBe(document);
    expect(existsSync(join(shared, 'nats'))).toBe(false);
  });

  it('SVC_RELAY_WEBHOOK_CA_FILE that holds no PEM certificate', async () => {
    expectRefusedNaming(await refusal({ SVC_RELAY_WEBHOOK_CA_FILE: notPem }), 'SVC_RELAY_WEBHOOK_CA_FILE');
  });

  it('SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE that holds no PEM certificate, before the bus starts', async () => {
    const r = await refusal({
      SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: 'https://idp.example.test',
      SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example.test/api',
      SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: 'operator-app',
      SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE: notPem,
    });
    expectRefusedNaming(r, 'SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE');
  });

  it.each([
    [
      'SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE',
      { SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example.test/api' },
    ],
    ['SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID', { SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: 'operator-app' }],
    [
      'SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL',
      { SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL: 'https://idp.example.test/jwks' },
    ],
    ['SVC_RELAY_IDENTITY_BROKER_CLIENT_ID', { SVC_RELAY_IDENTITY_BROKER_CLIENT_ID: 'spa-1' }],
  ])('%s given without an issuer (the admin route would refuse every token)', async (setting, env) => {
    const r = await refusal(env);
    expectRefusedNaming(r, setting);
    expect(r.lines[0]).toMatch(/SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER|SVC_RELAY_IDENTITY_BROKER_ENDPOINT/);
  });

  it('an issuer and the identity broker together: one of them would be ignored', async () => {
    const r = await refusal({
      SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: 'https://idp.example.test',
      SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example.test/api',
      SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: 'operator-app',
      SVC_RELAY_IDENTITY_BROKER_ENDPOINT: 'https://broker.example.test',
      SVC_RELAY_IDENTITY_BROKER_CLIENT_ID: 'spa-1',
    });
    expectRefusedNaming(r, 'SVC_RELAY_IDENTITY_BROKER_ENDPOINT');
    expect(r.lines[0]).toContain('SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER');
  });

  it('the settings still accepted: a full authority, the broker form, levels and a large TTL', async () => {
    // refused only for the missing deployment, i.e. every setting passed
    for (const env of <Record<string, string>[]>[
      { SVC_RELAY_LOG_LEVEL: 'debug', SVC_RELAY_API_KEY_TTL_SECONDS: String(10 * 365 * 24 * 3600) },
      { SVC_RELAY_LOG_LEVEL: 'silent' },
      {
        SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: 'https://idp.example.test',
        SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example.test/api',
        SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: 'operator-app',
        SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL: 'https://idp.example.test/jwks',
      },
      {
        SVC_RELAY_IDENTITY_BROKER_ENDPOINT: 'https://broker.example.test',
        SVC_RELAY_IDENTITY_BROKER_CLIENT_ID: 'spa-1',
        SVC_RELAY_IDENTITY_BROKER_ADMIN_ENDPOINT: 'https://broker.example.test:3002',
        SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example.test/api',
      },
    ]) {
      const r = await refusal(env);
      expect(r.lines, JSON.stringify(env)).toHaveLength(1);
      expect(r.lines[0]).toMatch(/^svc-relay: error: no deployment in .* \(config_invalid\)$/);
    }
  });
});

describe('an external NATS the relay cannot use, as the operator sees it at start', () => {
  const base = tempDir('svc-relay-external-');
  const ops = join(base, 'ops');
  const dataDir = join(base, 'data');
  const start = async (env: Record<string, string>) => {
    const r = await runRelayCli(['serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0'], env, {
      bare: true,
      timeoutMs: 30_000,
    });
    return { code: r.code, lines: r.stderr.trimEnd().split('\n') };
  };
  let written = { operator_seed_file: '', system_creds_file: '' };
  const files = () => ({
    SVC_RELAY_NATS_OPERATOR_SEED_FILE: written.operator_seed_file,
    SVC_RELAY_NATS_SYSTEM_CREDS_FILE: written.system_creds_file,
  });

  it('a file that is not what the setting names, or a bus that does not answer: the setting or bus_unavailable', async () => {
    const init = await runRelayCli(['nats', 'operator-init', '--dir', ops, '--json'], {}, { bare: true });
    expect(init.code, init.stderr).toBe(0);
    written = JSON.parse(init.stdout) as typeof written;
    expect((await runRelayCli(['deployment', 'init', '--data-dir', dataDir], {}, { bare: true })).code).toBe(0);
    const url = `nats://127.0.0.1:${await freePort()}`; // nobody listens there
    const seed = await start({ SVC_RELAY_NATS_URL: url, ...files(), SVC_RELAY_NATS_OPERATOR_SEED_FILE: notPem });
    expect(seed.lines).toEqual([
      `svc-relay: error: SVC_RELAY_NATS_OPERATOR_SEED_FILE: ${notPem} does not hold an operator nkey seed (expected it to start with SO) (config_invalid)`,
    ]);
    expect(seed.code).toBe(2);
    const down = await start({ SVC_RELAY_NATS_URL: url, ...files() });
    expect(down.lines).toHaveLength(1);
    expect(down.lines[0]).toMatch(
      new RegExp(
        `^svc-relay: error: cannot connect to NATS at ${url} .*check SVC_RELAY_NATS_URL .*\\(bus_unavailable\\)$`,
      ),
    );
    expect(down.code).toBe(1);
  }, 90_000);

  it('a tenant quota past all the disk the managed nats-server has: the setting named (it said "jetstream is not enabled")', async () => {
    const own = tempDir('svc-relay-quota-');
    expect((await runRelayCli(['deployment', 'init', '--data-dir', own], {}, { bare: true })).code).toBe(0);
    const r = await runRelayCli(
      ['serve', '--data-dir', own, '--listen', '127.0.0.1:0'],
      { SVC_RELAY_TENANT_MAX_BYTES: String(10 ** 14) },
      { bare: true, timeoutMs: 30_000 },
    );
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(
      /^svc-relay: error: tenant default: nats-server cannot reserve its storage quota \(2 × SVC_RELAY_TENANT_MAX_BYTES .*\(config_invalid\)$/,
    );
    expect(r.code).toBe(2);
  }, 60_000);
});
