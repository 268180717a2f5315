/** Deployment trust without a relay: signed documents served over https with a private CA. */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { generateTestCertificates } from '@svc/test-harness/ca';
import { startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { CompactSign, exportJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const signer = generateKeyPairSync('ed25519');
let d: TestDaemon;
let server: Server;
let url: string;
let served = '';
let caPem = '';
let bundle = '';
let ready = true;
let readyChecks: Record<string, unknown> = { ledger: { ok: true }, bus: { ok: true } };

async function document(over: Record<string, unknown> = {}): Promise<string> {
  const doc = {
    typ: 'svc.deployment/v1',
    deployment_id: 'dep-https',
    api_url: url,
    leaf_url: null,
    tenants: ['acme'],
    relay_keys: [{ kid: 'r1', jwk: { kty: 'OKP', crv: 'Ed25519', x: 'AA' }, use: ['access-token', 'enrollment-code'] }],
    issued_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + 90 * 86_400_000).toISOString(),
    ...over,
  };
  return new CompactSign(new TextEncoder().encode(JSON.stringify(doc)))
    .setProtectedHeader({ alg: 'EdDSA', typ: 'svc-deployment+jws', kid: 's1' })
    .sign(signer.privateKey);
}

beforeAll(async () => {
  const certs = await generateTestCertificates();
  caPem = certs.caPem;
  server = createServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
    if (req.url === '/healthz')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    if (req.url === '/readyz') {
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ status: ready ? 'ready' : 'not_ready', checks: readyChecks }));
    }
    if (req.url !== '/.well-known/svc-deployment') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/jose' }).end(served);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  const jwk = await exportJWK(signer.publicKey);
  bundle = JSON.stringify({
    typ: 'svc.trust-bundle/v1',
    deployment_id: 'dep-https',
    signer_keys: [{ kid: 's1', jwk }],
    created_at: new Date().toISOString(),
  });
  served = await document();
  d = await startDaemon();
});

afterAll(async () => {
  await d?.daemon.close();
  await new Promise<void>((r) => server?.close(() => r()));
});

describe('deployments', () => {
  it('fetches over https only with the extra CA bundle', async () => {
    await expect(d.client.fetchDeployment({ url, trust_bundle: bundle, name: 'tls' })).rejects.toMatchObject({
      status: 503,
    });
    const info = await d.client.fetchDeployment({ url, trust_bundle: bundle, name: 'tls', ca_bundle: caPem });
    expect(info).toMatchObject({ name: 'tls', deployment_id: 'dep-https', relay_key_ids: ['r1'] });
    // renew reuses the stored URL and CA, and takes the newer document
    const first = served;
    served = await document({ tenants: ['acme', 'globex'], issued_at: new Date(Date.now() + 1000).toISOString() });
    expect((await d.client.renewDeployment('tls')).tenants).toEqual(['acme', 'globex']);
    // the same document again is a no-op
    expect((await d.client.renewDeployment('tls')).tenants).toEqual(['acme', 'globex']);
    served = first;
  });

  it('refuses a renewal with a document older than the one held (a replay), served or given', async () => {
    const held = await d.client.getDeployment('tls');
    const older = await document({
      tenants: ['acme'],
      issued_at: new Date(Date.parse(held.issued_at) - 60_000).toISOString(),
    });
    const sameTime = await document({ tenants: ['acme'], issued_at: held.issued_at });
    for (const stale of [older, sameTime]) {
      await expect(d.client.renewDeployment('tls', { document: stale })).rejects.toMatchObject({
        code: 'deployment_stale',
        status: 409,
      });
    }
    served = older;
    await expect(d.client.renewDeployment('tls')).rejects.toMatchObject({ code: 'deployment_stale' });
    expect(await d.client.getDeployment('tls')).toEqual(held);
  });

  it('refuses expired documents and renewals that switch deployment', async () => {
    const expired = await document({ expires_at: new Date(Date.now() - 1000).toISOString() });
    await expect(
      d.client.addDeployment({ document: expired, trust_bundle: bundle, name: 'old' }),
    ).rejects.toMatchObject({ code: 'deployment_expired' });
    const other = await document({ deployment_id: 'dep-other' });
    await expect(d.client.renewDeployment('tls', { document: other })).rejects.toMatchObject({
      code: 'deployment_mismatch',
    });
  });

  it("refuses a deployment under the id of this machine's offline agents (local)", async () => {
    const local = JSON.stringify({ ...JSON.parse(bundle), deployment_id: 'local' });
    for (const attempt of [
      () => d.client.fetchDeployment({ url, trust_bundle: local, name: 'local-looking', ca_bundle: caPem }),
      async () =>
        d.client.addDeployment({
          document: await document({ deployment_id: 'local' }),
          trust_bundle: local,
          name: 'local-looking',
        }),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ code: 'deployment_malformed' });
    }
  });

  it('adds, audits, inspects and removes', async () => {
    const soon = await document({
      expires_at: new Date(Date.now() + 2 * 86_400_000).toISOString(),
      api_url: 'http://relay.example',
    });
    await d.client.addDeployment({ document: soon, trust_bundle: bundle, name: 'soon' });
    const audit = await d.client.auditDeployments();
    expect(audit.find((x) => x.name === 'tls')).toMatchObject({ ok: true });
    const bad = audit.find((x) => x.name === 'soon');
    expect(bad?.ok).toBe(false);
    expect(bad?.problems.join('\n')).toMatch(/expires soon[\s\S]*not https/);
    expect((await d.client.listDeployments()).map((x) => x.name)).toEqual(['soon', 'tls']);
    await d.client.removeDeployment('soon');
    await expect(d.client.getDeployment('soon')).rejects.toMatchObject({ code: 'unknown_deployment', status: 404 });
    // a name that is no file name is looked up as a deployment id, never as a path
    await expect(d.client.removeDeployment('../etc')).rejects.toMatchObject({ code: 'unknown_deployment' });
  });

  it('diagnoses a deployment step by step, now or at another time, by name or id', async () => {
    const expires = Date.parse((await d.client.getDeployment('tls')).expires_at);
    const now = await d.client.diagnoseDeployment('tls');
    expect(now).toMatchObject({ name: 'tls', deployment_id: 'dep-https', verifies: true, ok: true });
    expect(now.checks.map((c) => `${c.check} ${c.status}`)).toEqual(
      ['trust_bundle', 'format', 'signer', 'signature', 'payload', 'deployment', 'validity']
        .concat(['renewal', 'enrollment_key', 'access_key', 'api_url'])
        .map((c) => `${c} ok`),
    );
    // by its id, three days before it expires: it verifies, and is due for renewal
    expect((await d.client.getDeployment('dep-https')).name).toBe('tls');
    const soon = await d.client.diagnoseDeployment('dep-https', new Date(expires - 3 * 86_400_000).toISOString());
    expect(soon).toMatchObject({ name: 'tls', verifies: true, ok: false });
    expect(soon.checks.find((c) => c.check === 'renewal')).toMatchObject({
      status: 'warn',
      detail: expect.stringContaining('svc deployment renew tls'),
    });
    // after it expired: the validity step fails; what the signer wrote is still checked
    const late = await d.client.diagnoseDeployment('tls', new Date(expires + 1000).toISOString());
    expect(late).toMatchObject({ verifies: false, ok: false, at: new Date(expires + 1000).toISOString() });
    const byCheck = Object.fromEntries(late.checks.map((c) => [c.check, c]));
    expect(byCheck.validity).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^deployment_expired: /) });
    expect(byCheck.renewal?.status).toBe('skipped');
    expect(byCheck.access_key?.status).toBe('ok');
    await expect(d.client.diagnoseDeployment('nope')).rejects.toMatchObject({
      code: 'unknown_deployment',
      status: 404,
    });
    await expect(d.client.diagnoseDeployment('tls', 'yesterday')).rejects.toMatchObject({ status: 400 });
  });

  it('a stored document whose signature no longer verifies: the later steps are not checked, audit says why', async () => {
    const copy = await d.client.addDeployment({ document: await document(), trust_bundle: bundle, name: 'tampered' });
    const file = join(d.home, 'deployments', 'tampered.json');
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { document: string };
    const [h, p, sig] = stored.document.split('.') as [string, string, string];
    // another payload under the same signature: what a hand edit of the file would do
    const edited = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), api_url: 'https://evil.example' }),
    );
    writeFileSync(file, JSON.stringify({ ...stored, document: `${h}.${edited.toString('base64url')}.${sig}` }));
    try {
      const r = await d.client.diagnoseDeployment(copy.name);
      expect(r).toMatchObject({ verifies: false, ok: false });
      expect(r.checks.map((c) => `${c.check} ${c.status}`)).toEqual([
        'trust_bundle ok',
        'format ok',
        'signer ok',
        'signature fail',
        'payload skipped',
        'deployment skipped',
        'validity skipped',
        'renewal skipped',
        'enrollment_key skipped',
        'access_key skipped',
        'api_url skipped',
      ]);
      const audit = (await d.client.auditDeployments()).find((x) => x.name === 'tampered');
      expect(audit).toMatchObject({
        ok: false,
        problems: [expect.stringMatching(/^deployment_untrusted: .*signature/)],
      });
    } finally {
      await d.client.removeDeployment('tampered');
    }
  });

  it('fetch or add without a name of a deployment trusted already renews that entry, adding none', async () => {
    served = await document({ tenants: ['acme', 'initech'], issued_at: new Date(Date.now() + 5000).toISOString() });
    const fetched = await d.client.fetchDeployment({ url, trust_bundle: bundle, ca_bundle: caPem });
    expect(fetched).toMatchObject({ name: 'tls', deployment_id: 'dep-https', already_trusted: true });
    expect(fetched.tenants).toEqual(['acme', 'initech']);
    const added = await d.client.addDeployment({ document: served, trust_bundle: bundle });
    expect(added).toMatchObject({ name: 'tls', already_trusted: true });
    expect((await d.client.listDeployments()).map((x) => x.name)).toEqual(['tls']);
    // an older document is refused as renew refuses it, and the entry stays as it was
    const older = await document({ issued_at: new Date(Date.now() - 60_000).toISOString() });
    await expect(d.client.addDeployment({ document: older, trust_bundle: bundle })).rejects.toMatchObject({
      code: 'deployment_stale',
    });
    expect((await d.client.getDeployment('tls')).tenants).toEqual(['acme', 'initech']);
    // with a name, a second entry is what was asked for
    expect(
      await d.client.addDeployment({ document: served, trust_bundle: bundle, name: 'tls-copy' }),
    ).not.toHaveProperty('already_trusted');
  });
  it('checks a relay at an address (doctor --api-url): it answers, is ready, and is a deployment trusted here', async () => {
    const byCheck = (r: { checks: Array<{ check: string; status: string; detail: string }> }) =>
      Object.fromEntries(r.checks.map((c) => [c.check, `${c.status}: ${c.detail}`]));
    // the trusted deployment's CA reaches it; its document verifies
    const good = await d.client.checkRelay(url);
    expect(good).toMatchObject({ url, ok: true });
    expect(byCheck(good)).toMatchObject({
      healthz: 'ok: the relay answers',
      readyz: 'ok: ready: ledger ok, bus ok',
      trusted: expect.stringMatching(/^ok: its document verifies as deployment tls(-copy)? \(dep-https\)$/),
      api_url: expect.stringMatching(/^ok: /),
    });
    // not ready: the relay's own words, one line, cut short
    ready = false;
    readyChecks = { ledger: { ok: false, detail: `disk full\n\u001b[2J${'x'.repeat(500)}` }, bus: { ok: true } };
    try {
      const r = await d.client.checkRelay(url);
      expect(r.ok).toBe(false);
      const line = byCheck(r).readyz as string;
      expect(line).toMatch(/^fail: not ready \(503\): ledger not ok \(disk full\\x0a\\x1b\[2Jx+…\), bus ok$/);
      expect(line.length).toBeLessThan(300);
    } finally {
      ready = true;
      readyChecks = { ledger: { ok: true }, bus: { ok: true } };
    }
    // a document of a deployment not trusted here: said, with what to do
    const first = served;
    served = await document({ deployment_id: 'dep-elsewhere' });
    try {
      const r = await d.client.checkRelay(url);
      expect(byCheck(r)).toMatchObject({
        trusted: expect.stringMatching(
          /^warn: no deployment trusted here is deployment dep-elsewhere: trust it with svc deployment fetch/,
        ),
        api_url: 'skipped: not checked: the document is not verified',
      });
    } finally {
      served = first;
    }
    // nobody there: the rest is not checked
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const gone = `https://127.0.0.1:${(closed.address() as { port: number }).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = await d.client.checkRelay(gone);
    expect(down.checks.map((c) => `${c.check} ${c.status}`)).toEqual([
      'url ok',
      'healthz fail',
      'readyz skipped',
      'document skipped',
      'trusted skipped',
      'api_url skipped',
    ]);
    // plain http off loopback is refused before any request; a non-URL is a bad request
    expect(byCheck(await d.client.checkRelay('http://relay.example'))).toMatchObject({
      url: 'fail: http://relay.example is not https (plain http only on loopback)',
    });
    await expect(d.client.checkRelay('not a url')).rejects.toMatchObject({ code: 'validation_failed', status: 400 });
  });
});
