import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DaemonError } from '../errors.js';
import { DEFAULT_SCRYPT, FileVault, PLAIN_VAULT_WARNING } from './file-vault.js';
import { openVault } from './index.js';

const FAST = { N: 1024, r: 8, p: 1 };
const tmp = () => mkdtempSync(join(tmpdir(), 'svc-vault-'));

describe('file vault', () => {
  it('encrypts with the passphrase and reads back after reopening', () => {
    const file = join(tmp(), 'vault.json');
    const v = FileVault.open(file, 'correct horse', FAST);
    expect(v.kind).toBe('file-encrypted');
    expect(v.warning).toBeUndefined();
    v.set('agent/a/seed', 'SECRET-SEED-VALUE');
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain('SECRET-SEED-VALUE');
    expect(text).not.toContain('agent/a/seed');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const again = FileVault.open(file, 'correct horse', FAST);
    expect(again.get('agent/a/seed')).toBe('SECRET-SEED-VALUE');
    again.delete('agent/a/seed');
    expect(FileVault.open(file, 'correct horse', FAST).get('agent/a/seed')).toBeUndefined();
  });

  it('a wrong or missing passphrase gives vault_locked on every access', () => {
    const file = join(tmp(), 'vault.json');
    FileVault.open(file, 'right', FAST).set('k', 'v');
    for (const pass of ['wrong', undefined]) {
      const locked = FileVault.open(file, pass, FAST);
      expect(locked.locked).toBe(true);
      expect(locked.warning).toMatch(/locked/);
      expect(() => locked.get('k')).toThrowError(DaemonError);
      try {
        locked.set('k', 'x');
      } catch (err) {
        expect((err as DaemonError).code).toBe('vault_locked');
        expect((err as DaemonError).status).toBe(423);
      }
    }
    // the locked vault never overwrote the file
    expect(FileVault.open(file, 'right', FAST).get('k')).toBe('v');
  });

  it('falls back to a plain 0600 file with a warning when there is no passphrase', () => {
    const home = tmp();
    const file = join(home, 'vault.json');
    const v = openVault({ home, file, backend: 'file' });
    expect(v.kind).toBe('file-plain');
    expect(v.warning).toBe(PLAIN_VAULT_WARNING);
    v.set('agent/x/api_key', 'svc_ak_test');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('a plain vault is encrypted on the first open with a passphrase, keeping its secrets, in one write', () => {
    const home = tmp();
    const file = join(home, 'vault.json');
    openVault({ home, file, backend: 'file' }).set('agent/x/api_key', 'svc_ak_test');
    const upgraded = openVault({ home, file, backend: 'file', passphrase: 'later', scrypt: FAST });
    expect(upgraded.kind).toBe('file-encrypted');
    expect(upgraded.warning).toBeUndefined();
    expect(upgraded.get('agent/x/api_key')).toBe('svc_ak_test');
    expect(readFileSync(file, 'utf8')).not.toContain('svc_ak_test');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(home)).toEqual(['vault.json']); // renamed into place, no temp file left
    // from now on it needs the passphrase; without it the vault is locked, never plain again
    const without = FileVault.open(file, undefined, FAST);
    expect(without.locked).toBe(true);
    // and says which: missing or wrong, and what to do
    expect(without.warning).toMatch(/started without SVC_VAULT_PASSPHRASE; set it, run `svc stop`/);
    const wrong = FileVault.open(file, 'not it', FAST);
    expect(wrong.warning).toMatch(/SVC_VAULT_PASSPHRASE does not open it .*; set the right one, run `svc stop`/);
    expect(() => wrong.get('agent/x/api_key')).toThrow(/does not open it/);
    expect(FileVault.open(file, 'later', FAST).get('agent/x/api_key')).toBe('svc_ak_test');
  });

  it('refuses key derivation parameters below the floor or beyond the ceiling, without touching the file', () => {
    const file = join(tmp(), 'vault.json');
    FileVault.open(file, 'pass', FAST).set('k', 'v');
    const original = readFileSync(file, 'utf8');
    const parsed = JSON.parse(original);
    const withKdf = (kdf: Record<string, unknown>) => {
      writeFileSync(file, JSON.stringify({ ...parsed, kdf: { ...parsed.kdf, ...kdf } }));
      return FileVault.open(file, 'pass', DEFAULT_SCRYPT);
    };
    // what the daemon creates is 2^15 / 8: a file at 2^10, or with r = 1, is refused
    for (const kdf of [
      {},
      { N: 2 ** 15, r: 1 },
      { N: 2 ** 15 + 1 },
      { N: 2 ** 40 },
      { N: 'big' },
      { salt: 'c2FsdA' },
    ]) {
      const v = withKdf(kdf);
      expect(v.locked, JSON.stringify(kdf)).toBe(true);
      expect(v.warning).toMatch(/key derivation parameters are refused/);
      expect(() => v.get('k')).toThrow(/key derivation parameters are refused/);
    }
    // the floor is what vaults are created with: these parameters pass it
    writeFileSync(file, original);
    expect(FileVault.open(file, 'pass', FAST).get('k')).toBe('v');
  });

  it('auto mode uses the keyring when it works, else the file vault', () => {
    const home = tmp();
    const v = openVault({ home, file: join(home, 'vault.json'), backend: 'auto', passphrase: 'p', scrypt: FAST });
    expect(['keyring', 'file-encrypted']).toContain(v.kind);
    if (v.kind === 'keyring') v.delete('nothing');
  });
});
