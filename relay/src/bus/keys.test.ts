import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccount, createOperator, createUser, fromSeed } from '@nats-io/nkeys';
import { afterAll, describe, expect, it } from 'vitest';
import { deriveAccountKey, loadOrCreateSeed, nativeKeyPair } from './keys.js';

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe('loadOrCreateSeed', () => {
  it('several creators at once (relay instances on one data dir) all get the one seed written first', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-seed-'));
    dirs.push(dir);
    const file = join(dir, 'tenants', 'acme', 'account.nk');
    const keys = await Promise.all(Array.from({ length: 20 }, () => loadOrCreateSeed(file, 'account')));
    const publics = new Set(keys.map((k) => k.getPublicKey()));
    expect(publics.size).toBe(1);
    expect((await readFile(file, 'utf8')).trim()).toBe(new TextDecoder().decode(keys[0]?.getSeed()));
    // and a later start loads it
    expect((await loadOrCreateSeed(file, 'account')).getPublicKey()).toBe([...publics][0]);
  });
});

describe('deriveAccountKey', () => {
  it('derives the same account key from the same seed and label, and another from another', () => {
    const secret = createAccount();
    const a = deriveAccountKey(secret, 'edge-row-1');
    expect(a.getPublicKey()).toMatch(/^A[A-Z2-7]{55}$/);
    expect(new TextDecoder().decode(a.getSeed())).toMatch(/^SA[A-Z2-7]{56}$/);
    expect(deriveAccountKey(fromSeed(secret.getSeed()), 'edge-row-1').getPublicKey()).toBe(a.getPublicKey());
    expect(deriveAccountKey(secret, 'edge-row-2').getPublicKey()).not.toBe(a.getPublicKey());
    expect(deriveAccountKey(createAccount(), 'edge-row-1').getPublicKey()).not.toBe(a.getPublicKey());
  });
});

describe('nativeKeyPair', () => {
  it('signs, verifies and names itself exactly as nkeys does, for every kind of key', () => {
    for (const make of [createOperator, createAccount, createUser]) {
      const kp = make();
      const native = nativeKeyPair(fromSeed(kp.getSeed()));
      expect(native.getPublicKey()).toBe(kp.getPublicKey());
      expect(native.getPrivateKey()).toEqual(kp.getPrivateKey());
      for (const input of [
        new Uint8Array(0),
        new TextEncoder().encode('a JWT header.a JWT payload'),
        randomBytes(4096),
      ]) {
        const signature = native.sign(input);
        expect(Buffer.from(signature).toString('hex')).toBe(Buffer.from(kp.sign(input)).toString('hex'));
        expect(kp.verify(input, signature)).toBe(true);
        expect(native.verify(input, signature)).toBe(true);
        expect(native.verify(input, kp.sign(new TextEncoder().encode('another input')))).toBe(false);
      }
      expect(nativeKeyPair(native)).toBe(native);
    }
  });

  it('is what loaded, created and derived keys are', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-seed-'));
    dirs.push(dir);
    const created = await loadOrCreateSeed(join(dir, 'operator.nk'), 'operator');
    const loaded = await loadOrCreateSeed(join(dir, 'operator.nk'), 'operator');
    const derived = deriveAccountKey(createAccount(), 'edge-row-1');
    for (const kp of [created, loaded, derived]) expect(nativeKeyPair(kp)).toBe(kp);
  });
});
