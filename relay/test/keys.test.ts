/** The key directory: uploads, rotations, history, lookups, tenant isolation, refusals. */
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { type KeyRecord, keyRecordBytes, toBase64url } from '@svc/shared';
import { enrollmentBody, newIdentity, signInSignature } from '@svc/test-harness/agent-client';
import { type InProcessAgent, type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyEd25519 } from '../src/auth/signatures.js';
import { KeyDirectory } from '../src/ledger/keys.js';
import { mintGrant } from '../src/services/grants.js';

const DEPLOYMENT = 'dep-keys-test';
let relay: InProcessRelay;
beforeEach(async () => {
  relay = await inProcessRelay({ tenants: ['acme', 'globex'], deploymentId: DEPLOYMENT });
});
afterEach(async () => {
  await relay.close();
});

type Agent = InProcessAgent;
const enroll = (tenant: string, agentId: string, agentNumber?: string): Promise<Agent> =>
  relay.enroll(tenant, agentId, { agentNumber });

const edKeys = () => {
  const k = generateKeyPairSync('ed25519');
  return { privateKey: k.privateKey, publicKey: (k.publicKey.export({ format: 'jwk' }) as { x: string }).x };
};
const xKey = () => (generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' }) as { x: string }).x;

const statement = (agent: Agent, version: number, signing: string, encryption: string, createdAt: string) =>
  keyRecordBytes({
    deployment_id: DEPLOYMENT,
    tenant_id: agent.tenant,
    agent_id: agent.agentId,
    agent_number: agent.agentNumber,
    version,
    signing_public_key: signing,
    encryption_public_key: encryption,
    created_at: createdAt,
  });

/** The body of a PUT for `version`, signed by `signWith` and, if given, by `previousKey`. */
function upload(
  agent: Agent,
  version: number,
  keys: { signing: string; encryption: string; signWith: KeyObject; previousKey?: KeyObject; createdAt?: string },
) {
  const created_at = keys.createdAt ?? new Date().toISOString();
  const bytes = statement(agent, version, keys.signing, keys.encryption, created_at);
  return {
    signing_public_key: keys.signing,
    encryption_public_key: keys.encryption,
    created_at,
    signature: toBase64url(sign(null, bytes, keys.signWith)),
    ...(keys.previousKey ? { previous_signature: toBase64url(sign(null, bytes, keys.previousKey)) } : {}),
  };
}

const put = (agent: Agent, payload: unknown) => relay.api(agent.token, 'PUT', '/api/v1/agents/me/keys', payload);
const get = (agent: Agent, url: string) => relay.api(agent.token, 'GET', url);

async function expectRefused(agent: Agent, payload: unknown, status: number, code: string) {
  const before = (await get(agent, '/api/v1/agents/me/keys')).json();
  const res = await put(agent, payload);
  expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
  expect(res.json()).toEqual({ error: code, message: expect.any(String) });
  expect((await get(agent, '/api/v1/agents/me/keys')).json()).toEqual(before); // nothing recorded
}

describe('version 1 from enrollment', () => {
  it('serves the enrollment keys as version 1, signed by the enrolling identity over the proof time', async () => {
    const alice = await enroll('acme', 'alice');
    const res = await get(alice, '/api/v1/agents/me/keys');
    expect(res.statusCode).toBe(200);
    const entry = res.json() as { current: KeyRecord; history: KeyRecord[] };
    const v1 = {
      version: 1,
      signing_public_key: alice.identity.signPublic,
      encryption_public_key: alice.identity.encPublic,
      created_at: expect.any(String),
      signature: expect.any(String),
      previous_signature: null,
    };
    expect(entry).toEqual({
      deployment_id: DEPLOYMENT,
      tenant_id: 'acme',
      agent_id: 'alice',
      agent_number: 'alice',
      current: v1,
      history: [v1],
    });
    const bytes = statement(alice, 1, alice.identity.signPublic, alice.identity.encPublic, entry.current.created_at);
    expect(verifyEd25519(alice.identity.signPublic, bytes, entry.current.signature as string)).toBe(true);
  });

  it('refuses an enrollment whose version 1 signature is missing, foreign or over other fields, spending nothing', async () => {
    const grant = await mintGrant(relay.ctx, {
      tenantId: 'acme',
      agentId: 'bob',
      capabilities: ['http-relay'],
      createdBy: 't',
    });
    const id = newIdentity();
    const other = newIdentity();
    const { key_record_signature: _omit, ...unsigned } = enrollmentBody(grant.enrollment_code, id);
    const bad = [
      unsigned,
      {
        ...enrollmentBody(grant.enrollment_code, id),
        key_record_signature: enrollmentBody(grant.enrollment_code, other).key_record_signature,
      },
      enrollmentBody(grant.enrollment_code, id, { recordOverride: { encryption_public_key: other.encPublic } }),
      enrollmentBody(grant.enrollment_code, id, { recordOverride: { agent_number: 'carol' } }),
      enrollmentBody(grant.enrollment_code, id, { recordOverride: { version: 2 } }),
    ];
    for (const body of bad) {
      const res = await relay.app.inject({ method: 'POST', url: '/api/v1/enrollment', payload: body });
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json()).toMatchObject({ error: 'invalid_enrollment' });
    }
    const ok = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/enrollment',
      payload: enrollmentBody(grant.enrollment_code, id),
    });
    expect(ok.statusCode, ok.body).toBe(201);
  });

  it('an incarnation enrolled before version 1 was signed is served unsigned, derived from its row', async () => {
    const alice = await enroll('acme', 'alice');
    await relay.ctx.ledger.sql.run('DELETE FROM agent_key_records');
    const res = await get(alice, '/api/v1/agents/me/keys');
    expect(res.json()).toMatchObject({ current: { version: 1, signature: null, previous_signature: null } });
  });

  it('an unsigned version 1 is signed by uploading the same keys as version 2 (keys backfill); a retry is a 200', async () => {
    const alice = await enroll('acme', 'alice');
    await relay.ctx.ledger.sql.run('DELETE FROM agent_key_records');
    const same = { signing: alice.identity.signPublic, encryption: alice.identity.encPublic };
    // signed by another key, or for the wrong version: refused, nothing recorded
    await expectRefused(
      alice,
      upload(alice, 2, { ...same, signWith: edKeys().privateKey }),
      400,
      'invalid_key_signature',
    );
    await expectRefused(
      alice,
      upload(alice, 3, { ...same, signWith: alice.identity.signPrivate }),
      400,
      'invalid_key_signature',
    );
    const body = upload(alice, 2, { ...same, signWith: alice.identity.signPrivate });
    const res = await put(alice, body);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual({ version: 2, ...body, previous_signature: null });
    const dir = (await get(alice, '/api/v1/agents/me/keys')).json();
    expect(dir.history.map((r: KeyRecord) => [r.version, r.signature === null])).toEqual([
      [1, true],
      [2, false],
    ]);
    const retry = await put(alice, body);
    expect(retry.statusCode).toBe(200);
    expect(retry.json()).toEqual(res.json());
  });

  it('uploading the current keys again is an idempotent 200 with the current record', async () => {
    const alice = await enroll('acme', 'alice');
    const res = await put(
      alice,
      upload(alice, 2, {
        signing: alice.identity.signPublic,
        encryption: alice.identity.encPublic,
        signWith: alice.identity.signPrivate,
      }),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ version: 1, signature: expect.any(String) });
  });
});

describe('rotation', () => {
  it('rotates the encryption key with a self-signature only, and a retry is idempotent', async () => {
    const alice = await enroll('acme', 'alice');
    const encryption = xKey();
    const body = upload(alice, 2, {
      signing: alice.identity.signPublic,
      encryption,
      signWith: alice.identity.signPrivate,
    });
    const res = await put(alice, body);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({ version: 2, ...body, previous_signature: null });
    const retry = await put(alice, body);
    expect(retry.statusCode).toBe(200);
    expect(retry.json()).toEqual(res.json());
    const dir = (await get(alice, '/api/v1/agents/me/keys')).json();
    expect(dir.current).toEqual(res.json());
    expect(dir.history.map((r: KeyRecord) => r.version)).toEqual([1, 2]);
    expect(dir.history[0].encryption_public_key).toBe(alice.identity.encPublic);
  });

  it('refuses a new signing key without previous_signature, accepts it with one', async () => {
    const alice = await enroll('acme', 'alice');
    const next = edKeys();
    const keys = { signing: next.publicKey, encryption: xKey(), signWith: next.privateKey };
    await expectRefused(alice, upload(alice, 2, keys), 400, 'previous_signature_required');
    // previous_signature by a key other than the current one
    await expectRefused(
      alice,
      upload(alice, 2, { ...keys, previousKey: edKeys().privateKey }),
      400,
      'invalid_previous_signature',
    );
    const res = await put(alice, upload(alice, 2, { ...keys, previousKey: alice.identity.signPrivate }));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      version: 2,
      signing_public_key: next.publicKey,
      previous_signature: expect.any(String),
    });
  });

  it('keeps every version, each verifying against its statement, and refuses a retired key', async () => {
    const alice = await enroll('acme', 'alice');
    const s2 = edKeys();
    const s3 = edKeys();
    const e2 = xKey();
    expect(
      (
        await put(
          alice,
          upload(alice, 2, {
            signing: alice.identity.signPublic,
            encryption: e2,
            signWith: alice.identity.signPrivate,
          }),
        )
      ).statusCode,
    ).toBe(201);
    expect(
      (
        await put(
          alice,
          upload(alice, 3, {
            signing: s2.publicKey,
            encryption: e2,
            signWith: s2.privateKey,
            previousKey: alice.identity.signPrivate,
          }),
        )
      ).statusCode,
    ).toBe(201);
    expect(
      (
        await put(
          alice,
          upload(alice, 4, {
            signing: s3.publicKey,
            encryption: xKey(),
            signWith: s3.privateKey,
            previousKey: s2.privateKey,
          }),
        )
      ).statusCode,
    ).toBe(201);

    const dir = (await get(alice, '/api/v1/agents/alice/keys')).json();
    const history = dir.history as KeyRecord[];
    expect(history.map((r) => r.version)).toEqual([1, 2, 3, 4]);
    expect(dir.current).toEqual(history[3]);
    for (const [i, r] of history.entries()) {
      if (r.version === 1) continue;
      const bytes = statement(alice, r.version, r.signing_public_key, r.encryption_public_key, r.created_at);
      expect(verifyEd25519(r.signing_public_key, bytes, r.signature as string), `v${r.version}`).toBe(true);
      const prior = history[i - 1] as KeyRecord;
      if (r.signing_public_key !== prior.signing_public_key) {
        expect(verifyEd25519(prior.signing_public_key, bytes, r.previous_signature as string), `v${r.version}`).toBe(
          true,
        );
      } else {
        expect(r.previous_signature).toBeNull();
      }
    }
    // one version at a time, for the caller and for others
    const v3 = await get(alice, '/api/v1/agents/me/keys/3');
    expect(v3.json()).toEqual({
      deployment_id: DEPLOYMENT,
      tenant_id: 'acme',
      agent_id: 'alice',
      agent_number: 'alice',
      record: history[2],
    });
    expect((await get(alice, '/api/v1/agents/alice/keys/1')).json().record).toEqual(history[0]);
    expect((await get(alice, '/api/v1/agents/alice/keys/5')).statusCode).toBe(404);
    expect((await get(alice, '/api/v1/agents/alice/keys/0')).json().error).toBe('validation_failed');

    // going back to a retired key is refused
    await expectRefused(
      alice,
      upload(alice, 5, { signing: s2.publicKey, encryption: e2, signWith: s2.privateKey, previousKey: s3.privateKey }),
      400,
      'key_reused',
    );
  });

  it('signs in with the rotated signing key, and no longer with the old one', async () => {
    const alice = await enroll('acme', 'alice');
    const next = edKeys();
    const res = await put(
      alice,
      upload(alice, 2, {
        signing: next.publicKey,
        encryption: xKey(),
        signWith: next.privateKey,
        previousKey: alice.identity.signPrivate,
      }),
    );
    expect(res.statusCode).toBe(201);
    const signInWith = async (signPrivate: KeyObject) => {
      const challenge = (
        await relay.app.inject({
          method: 'POST',
          url: '/api/v1/auth/sign-in/challenge',
          payload: { deployment_id: DEPLOYMENT, tenant_id: 'acme', agent_id: 'alice' },
        })
      ).json();
      const signature = signInSignature(
        { ...alice.identity, signPrivate },
        {
          challenge_id: challenge.challenge_id,
          nonce: challenge.nonce,
          agent_id: 'alice',
          deployment_id: DEPLOYMENT,
          tenant_id: 'acme',
        },
      );
      return relay.app.inject({
        method: 'POST',
        url: '/api/v1/auth/sign-in',
        payload: { challenge_id: challenge.challenge_id, agent_id: 'alice', signature },
      });
    };
    expect((await signInWith(alice.identity.signPrivate)).json().error).toBe('invalid_sign_in');
    const ok = await signInWith(next.privateKey);
    expect(ok.statusCode).toBe(200);
    // the fresh token reads the same directory
    const fresh = { ...alice, token: ok.json().access_token };
    expect((await get(fresh, '/api/v1/agents/me/keys')).json().current.signing_public_key).toBe(next.publicKey);
  });
});

describe('lookup', () => {
  it('finds an agent whose number is as long as numbers may be (128), and one whose id is 256 long', async () => {
    // the router once cut path values at 100 characters (414): nobody could look such an agent up
    const alice = await enroll('acme', 'alice');
    const long = await enroll('acme', `id-${'i'.repeat(253)}`, 'n'.repeat(128));
    for (const key of ['n'.repeat(128), `id-${'i'.repeat(253)}`]) {
      const res = await get(alice, `/api/v1/agents/${key}/keys`);
      expect(res.statusCode, key).toBe(200);
      expect(res.json().current.signing_public_key).toBe(long.identity.signPublic);
      expect((await get(alice, `/api/v1/agents/${key}/keys/1`)).statusCode).toBe(200);
    }
    expect((await get(alice, `/api/v1/agents/${'n'.repeat(128)}`)).statusCode).toBe(200);
  });

  it('finds an agent of the same tenant by number and by id; other tenants and unknown agents are 404', async () => {
    const alice = await enroll('acme', 'alice');
    const bob = await enroll('acme', 'bob.internal', 'bob');
    const mallory = await enroll('globex', 'mallory');
    const byNumber = await get(alice, '/api/v1/agents/bob/keys');
    expect(byNumber.statusCode).toBe(200);
    expect(byNumber.json()).toMatchObject({ agent_id: 'bob.internal', agent_number: 'bob', tenant_id: 'acme' });
    expect(byNumber.json().current.signing_public_key).toBe(bob.identity.signPublic);
    expect((await get(alice, '/api/v1/agents/bob.internal/keys')).json()).toEqual(byNumber.json());
    expect((await get(bob, '/api/v1/agents/alice/keys')).json().current.encryption_public_key).toBe(
      alice.identity.encPublic,
    );

    for (const url of ['/api/v1/agents/alice/keys', '/api/v1/agents/alice/keys/1', '/api/v1/agents/nobody/keys']) {
      const res = await get(mallory, url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error, url).toBe('not_found');
    }
    expect((await relay.app.inject({ method: 'GET', url: '/api/v1/agents/alice/keys' })).json().error).toBe(
      'missing_token',
    );
  });

  it('serves only the active incarnation: a re-enrolled agent id starts a new history', async () => {
    const alice = await enroll('acme', 'alice');
    const bob = await enroll('acme', 'bob');
    const rotated = await put(
      alice,
      upload(alice, 2, {
        signing: alice.identity.signPublic,
        encryption: xKey(),
        signWith: alice.identity.signPrivate,
      }),
    );
    expect(rotated.statusCode).toBe(201);
    await relay.ctx.ledger.revokeAgent('acme', 'alice', relay.ctx.now());
    await relay.ctx.ledger.markCleanupDone(
      ((await relay.ctx.ledger.sql.get("SELECT id FROM agents WHERE agent_id = 'alice'")) as { id: string }).id,
    );
    expect((await get(bob, '/api/v1/agents/alice/keys')).statusCode).toBe(404);
    const again = await enroll('acme', 'alice');
    const dir = (await get(bob, '/api/v1/agents/alice/keys')).json();
    expect(dir.history).toHaveLength(1);
    expect(dir.current).toMatchObject({ version: 1, signing_public_key: again.identity.signPublic });
  });
});

describe('bad input', () => {
  it('refuses malformed keys, wrong signatures, stale times and wrong types with codes', async () => {
    const alice = await enroll('acme', 'alice');
    const sig = { signing: alice.identity.signPublic, signWith: alice.identity.signPrivate };
    const good = upload(alice, 2, { ...sig, encryption: xKey() });

    await expectRefused(alice, { ...good, encryption_public_key: 'too-short' }, 400, 'invalid_key_record');
    await expectRefused(
      alice,
      { ...good, encryption_public_key: `${good.encryption_public_key}AA` },
      400,
      'invalid_key_record',
    );
    // all-zero X25519 key: a low-order point
    await expectRefused(
      alice,
      upload(alice, 2, { ...sig, encryption: toBase64url(new Uint8Array(32)) }),
      400,
      'invalid_key_record',
    );
    // non-canonical base64url of the same bytes (trailing bits set)
    const last = good.encryption_public_key.at(-1) as string;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const twin = good.encryption_public_key.slice(0, -1) + alphabet[alphabet.indexOf(last) ^ 1];
    await expectRefused(alice, upload(alice, 2, { ...sig, encryption: twin }), 400, 'invalid_key_record');
    await expectRefused(alice, { ...good, signing_public_key: '!'.repeat(43) }, 400, 'invalid_key_record');

    // signatures: wrong key, wrong version, tampered, malformed
    await expectRefused(
      alice,
      upload(alice, 2, { ...sig, encryption: xKey(), signWith: edKeys().privateKey }),
      400,
      'invalid_key_signature',
    );
    await expectRefused(alice, upload(alice, 3, { ...sig, encryption: xKey() }), 400, 'invalid_key_signature');
    await expectRefused(alice, { ...good, encryption_public_key: xKey() }, 400, 'invalid_key_signature');
    await expectRefused(alice, { ...good, signature: 'AAAA' }, 400, 'invalid_key_signature');
    await expectRefused(alice, { ...good, previous_signature: 'AAAA' }, 400, 'invalid_previous_signature');

    // time
    const stale = new Date(Date.now() - 6 * 60_000).toISOString();
    await expectRefused(
      alice,
      upload(alice, 2, { ...sig, encryption: xKey(), createdAt: stale }),
      400,
      'key_record_stale',
    );
    const future = new Date(Date.now() + 6 * 60_000).toISOString();
    await expectRefused(
      alice,
      upload(alice, 2, { ...sig, encryption: xKey(), createdAt: future }),
      400,
      'key_record_stale',
    );
    await expectRefused(alice, { ...good, created_at: 'yesterday' }, 400, 'validation_failed');

    // types and shape
    await expectRefused(alice, { ...good, signature: 42 }, 400, 'validation_failed');
    await expectRefused(alice, { ...good, extra: true }, 400, 'validation_failed');
    const { signature: _omitted, ...unsigned } = good;
    await expectRefused(alice, unsigned, 400, 'validation_failed');
    await expectRefused(alice, [good], 400, 'validation_failed');

    // after all that, the good one still goes through as version 2
    expect((await put(alice, good)).statusCode).toBe(201);
  });

  it('the ledger appends only on top of the version the upload was signed for (a lost race is a conflict)', async () => {
    const alice = await enroll('acme', 'alice');
    const first = upload(alice, 2, {
      signing: alice.identity.signPublic,
      encryption: xKey(),
      signWith: alice.identity.signPrivate,
    });
    // a concurrent upload signed the same version: only one can become version 2
    const row = await relay.ctx.ledger.activeAgent('acme', 'alice');
    expect(row).toBeDefined();
    const dir = new KeyDirectory(relay.ctx.ledger);
    const next = { ...first, previous_signature: null };
    expect(await dir.append(row!.id, 1, next, Date.now())).toBe('appended');
    expect(await dir.append(row!.id, 1, { ...next, encryption_public_key: xKey() }, Date.now())).toBe('conflict');
    expect((await dir.history(row!)).map((r) => r.version)).toEqual([1, 2]);
  });

  it('an upload signed for the version another one just took: 409 key_version_conflict, not a bad signature', async () => {
    const alice = await enroll('acme', 'alice-race');
    const two = (encryption: string) =>
      upload(alice, 2, { signing: alice.identity.signPublic, encryption, signWith: alice.identity.signPrivate });
    expect((await put(alice, two(xKey()))).statusCode).toBe(201);
    // the loser of the race signed version 2 too
    const late = await put(alice, two(xKey()));
    expect({ status: late.statusCode, error: late.json().error }).toEqual({
      status: 409,
      error: 'key_version_conflict',
    });
    // a signature over any other version is still refused as such
    const wrong = upload(alice, 7, {
      signing: alice.identity.signPublic,
      encryption: xKey(),
      signWith: alice.identity.signPrivate,
    });
    expect((await put(alice, wrong)).json().error).toBe('invalid_key_signature');
  });
});

describe('openapi', () => {
  it('documents the key directory routes', async () => {
    const doc = (await relay.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/agents/me/keys',
        '/api/v1/agents/me/keys/{version}',
        '/api/v1/agents/{agent}/keys',
        '/api/v1/agents/{agent}/keys/{version}',
      ]),
    );
    expect(Object.keys(doc.paths['/api/v1/agents/me/keys'])).toEqual(expect.arrayContaining(['get', 'put']));
  });
});
