/**
 * The webhook address policy: which addresses are refused, when the URL is set (through
 * a real relay process without SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS) and again at delivery
 * (a name re-pointed to a private address after it was checked: DNS rebinding).
 */
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server } from 'node:net';
import { call, enrollAgent, type TestAgent } from '@svc/test-harness/agent-client';
import { generateTestCertificates } from '@svc/test-harness/ca';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEndpointUrl } from '../src/services/endpoint-url.js';
import { classifyAddress, type Lookup, resolveAllowed } from '../src/webhooks/address-policy.js';
import { postWebhook } from '../src/webhooks/post.js';

const to =
  (...addresses: string[]): Lookup =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['169.254.169.254', 'cloud metadata'],
    ['fd00:ec2::254', 'cloud metadata'],
    ['fd00:ec2:0::254', 'cloud metadata'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.10', 'reserved'],
    // IPv4 inside IPv6: mapped, NAT64, 6to4
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'cloud metadata'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:c0a8:101::1', 'private'],
    // every IPv6 form that embeds an IPv4 address is judged by that address
    ['::ffff:0:7f00:1', 'loopback'], // SIIT ::ffff:0:0:0/96
    ['::ffff:0:a9fe:a9fe', 'cloud metadata'],
    ['::ffff:0:808:808', 'public'],
    ['::7f00:1', 'loopback'], // IPv4-compatible ::/96
    ['::127.0.0.1', 'loopback'],
    ['::a00:1', 'private'],
    ['::808:808', 'public'],
    ['64:ff9b::7f00:1', 'loopback'], // NAT64 well-known prefix
    ['64:ff9b::a9fe:a9fe', 'cloud metadata'],
    ['64:ff9b::808:808', 'public'],
    ['64:ff9b:1::7f00:1', 'loopback'], // local-use NAT64, /96 layout
    ['64:ff9b:1::a9fe:a9fe', 'cloud metadata'],
    ['64:ff9b:1::c0a8:101', 'private'],
    ['64:ff9b:1:ffff:7f:0:100:0', 'loopback'], // /64 layout (bits 64-71 zero): 127.0.0.1
    // where several layouts fit, the strictest reading wins: /48 reads 127.0.1.0, /56 0.1.0.0
    ['64:ff9b:1:7f00:1::', 'unspecified'],
    ['64:ff9b:1:808:8:800::', 'public'], // /48 8.8.8.8, /56 8.8.8.0, /64 8.8.0.0: all public
    ['64:ff9b:1::808:808', 'public'],
    ['64:ff9b:1:0:100::1', 'reserved'], // bits 64-71 set: not a translated address
    ['64:ff9b:2::1', 'reserved'], // rest of 64:ff9b::/32
    ['2002:7f00:1::1', 'loopback'], // 6to4
    ['2002:a9fe:a9fe::1', 'cloud metadata'],
    ['2002:808:808::1', 'public'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // Teredo: client 127.0.0.1 stored inverted
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'private'], // client 10.0.0.1
    ['2001:0:4136:e378:8000:63bf:5601:5601', 'cloud metadata'], // client 169.254.169.254
    ['2001:0:7f00:1:8000:63bf:f7f7:f7f7', 'loopback'], // Teredo server 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'public'], // server 65.54.227.120, client 8.8.8.8
    // public
    ['93.184.216.34', 'public'],
    ['172.32.0.1', 'public'],
    ['100.128.0.1', 'public'],
    ['2606:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
  ])('%s is %s', (address, cls) => {
    expect(classifyAddress(address)).toBe(cls);
  });
});

describe('resolveAllowed', () => {
  it('checks every address a name resolves to', async () => {
    await expect(resolveAllowed('hooks.test', { allowPrivate: false, lookup: to('93.184.216.34') })).resolves.toEqual([
      { address: '93.184.216.34', family: 4 },
    ]);
    await expect(
      resolveAllowed('mixed.test', { allowPrivate: false, lookup: to('93.184.216.34', '10.0.0.7') }),
    ).rejects.toThrow(/mixed\.test resolves to 10\.0\.0\.7, a private address/);
  });

  it('with the setting allows loopback and private, never metadata, multicast or unspecified', async () => {
    const allow = { allowPrivate: true };
    await expect(resolveAllowed('127.0.0.1', allow)).resolves.toHaveLength(1);
    await expect(resolveAllowed('[::1]', allow)).resolves.toHaveLength(1);
    await expect(resolveAllowed('10.0.0.1', allow)).resolves.toHaveLength(1);
    await expect(resolveAllowed('169.254.169.254', allow)).rejects.toThrow(/cloud metadata/);
    await expect(resolveAllowed('[fd00:ec2::254]', allow)).rejects.toThrow(/cloud metadata/);
    await expect(resolveAllowed('metadata.google.internal', allow)).rejects.toThrow(/cloud metadata/);
    await expect(resolveAllowed('0.0.0.0', allow)).rejects.toThrow(/unspecified/);
    await expect(resolveAllowed('239.1.1.1', allow)).rejects.toThrow(/multicast/);
  });
});

describe('checkEndpointUrl (when the URL is set)', () => {
  it.each([
    'https://127.0.0.1/hook',
    'https://127.0.0.1:8443/hook',
    'https://10.1.2.3/hook',
    'https://192.168.0.10/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://[::1]/hook',
    'https://[::ffff:127.0.0.1]/hook',
    'https://[64:ff9b:1::7f00:1]/hook',
    'https://[64:ff9b:1::a9fe:a9fe]/hook',
    'https://[::ffff:0:7f00:1]/hook',
    'https://[fe80::1]/hook',
    'https://localhost/hook',
    'https://metadata.google.internal/computeMetadata/v1',
  ])('refuses %s without the setting', async (url) => {
    await expect(checkEndpointUrl(url)).rejects.toMatchObject({
      code: 'invalid_endpoint_url',
      message: expect.stringMatching(/is refused: .*(loopback|private|link-local|cloud metadata)/),
    });
  });

  it('says the operator can allow an address only where the setting would: not metadata, unspecified or reserved ones', async () => {
    const message = (url: string, allowPrivate = false) =>
      checkEndpointUrl(url, { allowPrivate }).then(
        () => 'accepted',
        (e: Error) => e.message,
      );
    expect(await message('https://10.1.2.3/h')).toMatch(
      /10\.1\.2\.3 is a private address; .*\(the operator can allow private ones\)$/,
    );
    for (const [url, allowPrivate] of [
      ['https://169.254.169.254/x', false],
      ['https://169.254.169.254/x', true],
      ['https://192.0.2.1/x', false],
      ['https://0.0.0.0/x', true],
    ] as const) {
      const m = await message(url, allowPrivate);
      expect(m, url).toMatch(/is refused: .*; webhooks go to public addresses only$/);
    }
    expect(await message('https://0.0.0.0/x')).toContain('0.0.0.0 is an unspecified address');
  });

  it('refuses a name that resolves to a private address; accepts public and not-yet-resolving names', async () => {
    await expect(checkEndpointUrl('https://internal.test/h', { lookup: to('192.168.7.7') })).rejects.toMatchObject({
      code: 'invalid_endpoint_url',
    });
    await expect(checkEndpointUrl('https://hooks.test/h', { lookup: to('93.184.216.34') })).resolves.toBe(
      'https://hooks.test/h',
    );
    const nowhere: Lookup = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    await expect(checkEndpointUrl('https://soon.test/h', { lookup: nowhere })).resolves.toBe('https://soon.test/h');
  });

  it('accepts loopback and private addresses with the setting', async () => {
    await expect(checkEndpointUrl('https://127.0.0.1:9/h', { allowPrivate: true })).resolves.toBe(
      'https://127.0.0.1:9/h',
    );
    await expect(checkEndpointUrl('https://localhost/h', { allowPrivate: true })).resolves.toBe('https://localhost/h');
  });
});

describe('at delivery', () => {
  let tcp: Server;
  let connections = 0;
  beforeAll(async () => {
    tcp = createTcpServer((s) => {
      connections += 1;
      s.destroy();
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  });
  afterAll(() => new Promise((r) => tcp.close(r)));

  it('a name checked as public that now resolves to loopback is refused without connecting', async () => {
    const port = (tcp.address() as { port: number }).port;
    const url = `https://rebind.test:${port}/hook`;
    // when set: public
    await expect(checkEndpointUrl(url, { lookup: to('93.184.216.34') })).resolves.toBe(url);
    // at delivery: re-pointed to the relay's own machine
    const outcome = await postWebhook({
      url,
      body: Buffer.from('{}'),
      headers: {},
      allowPrivate: false,
      lookup: to('127.0.0.1'),
      timeoutMs: 2000,
    });
    expect(outcome).toEqual({ kind: 'refused', error: 'rebind.test resolves to 127.0.0.1, a loopback address' });
    expect(connections).toBe(0);
  });

  it('connects to the checked address while TLS still verifies the URL host name', async () => {
    const certs = await generateTestCertificates({ hosts: ['hooks.example.test'] });
    let host: string | undefined;
    const server = createHttpsServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
      host = req.headers.host;
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const post = (name: string) =>
      postWebhook({
        url: `https://${name}:${port}/in`,
        body: Buffer.from('{}'),
        headers: {},
        allowPrivate: true,
        caPem: certs.caPem,
        lookup: to('127.0.0.1'),
        timeoutMs: 3000,
      });
    try {
      expect(await post('hooks.example.test')).toEqual({ kind: 'answered', status: 204 });
      expect(host).toBe(`hooks.example.test:${port}`);
      // the same address under a name the certificate does not cover: refused by TLS
      expect(await post('other.example.test')).toMatchObject({ kind: 'network' });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('PATCH /api/v1/agents/me on a relay without SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS', () => {
  let relay: RelayProcess;
  let agent: TestAgent;
  beforeAll(async () => {
    relay = await spawnRelay();
    const g = await runRelayCli(['grant', '--agent-id', 'ivy', '--json'], relay.env);
    agent = await enrollAgent(relay.url, JSON.parse(g.stdout).enrollment_code);
  }, 60_000);
  afterAll(async () => {
    await relay?.stop();
  });

  it.each([
    'https://127.0.0.1:8443/hook',
    'https://10.0.0.5/hook',
    'https://169.254.169.254/latest',
    'https://[::1]/hook',
    'https://localhost/hook',
  ])('refuses %s with 400 invalid_endpoint_url and stores nothing', async (url) => {
    const res = await call<{ error: string; message: string }>(
      relay.url,
      'PATCH',
      '/api/v1/agents/me',
      { endpoint_url: url },
      agent.auth,
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_endpoint_url');
    expect(res.body.message).toMatch(/^The webhook URL \(endpoint_url\) is refused/);
    const me = await call<{ endpoint_url: string | null }>(
      relay.url,
      'GET',
      '/api/v1/agents/me',
      undefined,
      agent.auth,
    );
    expect(me.body.endpoint_url).toBeNull();
  });
});
