/** Deployment trust without a relay: signed documents served over https with a private CA. */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:https';
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
    await expect(d.client.removeDeployment('../etc')).rejects.toMatchObject({ status: 400 });
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
});
