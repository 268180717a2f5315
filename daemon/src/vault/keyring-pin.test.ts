/**
 * The keyring choice is pinned in vault.json: a later start without a reachable keyring
 * locks the vault and says where the secrets are, and never starts an empty file vault
 * that would hide them from then on. (The real keyring made unreachable between two
 * starts: test/vault-keyring.test.ts.)
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DaemonError } from '../errors.js';
import { KEYRING_UNREACHABLE, keyringService, openVault } from './index.js';

const FAST = { N: 1024, r: 8, p: 1 };
const home = () => mkdtempSync(join(tmpdir(), 'svc-vault-pin-'));
const up = () => true;
const down = () => false;

function expectLocked(v: ReturnType<typeof openVault>): void {
  expect(v.kind).toBe('keyring');
  expect(v.warning).toBe(KEYRING_UNREACHABLE);
  for (const access of [() => v.get('k'), () => v.set('k', 'v'), () => v.delete('k')]) {
    try {
      access();
      expect.unreachable('a locked vault answered');
    } catch (err) {
      expect(err).toBeInstanceOf(DaemonError);
      expect((err as DaemonError).code).toBe('vault_locked');
      expect((err as DaemonError).message).toMatch(/OS keyring, which is not reachable/);
    }
  }
}

describe('keyring pin', () => {
  it('choosing the keyring writes vault.json naming it and its service', () => {
    const h = home();
    const file = join(h, 'vault.json');
    expect(openVault({ home: h, file, backend: 'auto', probe: up }).kind).toBe('keyring');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ v: 1, kind: 'keyring', service: keyringService(h) });
  });

  it('a pinned keyring that is unreachable gives a locked vault, and the pin stays', () => {
    const h = home();
    const file = join(h, 'vault.json');
    openVault({ home: h, file, backend: 'auto', probe: up });
    const pin = readFileSync(file, 'utf8');
    // with or without a passphrase, whatever the backend setting says
    for (const backend of ['auto', 'file'] as const) {
      expectLocked(openVault({ home: h, file, backend, passphrase: 'p', scrypt: FAST, probe: down }));
    }
    expect(readFileSync(file, 'utf8')).toBe(pin);
    // once it is back, the same service is used again
    const seen: string[] = [];
    const probe = (service: string) => {
      seen.push(service);
      return true;
    };
    const back = openVault({ home: h, file, backend: 'file', probe });
    expect(back.kind).toBe('keyring');
    expect(back.warning).toBeUndefined();
    expect(seen).toEqual([keyringService(h)]);
  });

  it('a home with agents and no vault.json had its secrets in the keyring: locked, no file vault made', () => {
    const h = home();
    const file = join(h, 'vault.json');
    expectLocked(openVault({ home: h, file, backend: 'auto', hasAgents: true, probe: down }));
    expect(existsSync(file)).toBe(false);
  });

  it('a new home without a keyring gets the file vault, as before', () => {
    const h = home();
    const file = join(h, 'vault.json');
    const v = openVault({ home: h, file, backend: 'auto', passphrase: 'p', scrypt: FAST, probe: down });
    expect(v.kind).toBe('file-encrypted');
    v.set('k', 'v');
    expect(openVault({ home: h, file, backend: 'auto', passphrase: 'p', scrypt: FAST, probe: up }).get('k')).toBe('v');
  });
});
