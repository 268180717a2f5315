/**
 * Chooses the vault: an existing vault.json keeps its kind (moving secrets silently
 * between stores would surprise the owner); otherwise the OS keyring when it works, then
 * an encrypted file vault when SVC_VAULT_PASSPHRASE is set, then a plain 0600 file with
 * a warning.
 */
import type { Logger } from 'pino';
import { FileVault, fileVaultKind } from './file-vault.js';
import { KeyringVault, keyringService, probeKeyring } from './keyring-vault.js';
import type { Vault } from './types.js';

export { FileVault, PLAIN_VAULT_WARNING } from './file-vault.js';
export * from './identity.js';
export { KeyringVault, keyringService, probeKeyring } from './keyring-vault.js';
export type { Vault, VaultKind } from './types.js';

export interface OpenVaultOptions {
  home: string;
  file: string;
  passphrase?: string;
  backend: 'auto' | 'keyring' | 'file';
  logger?: Logger;
  scrypt?: { N: number; r: number; p: number };
}

export function openVault(opts: OpenVaultOptions): Vault {
  const existing = fileVaultKind(opts.file);
  if (existing === undefined && opts.backend !== 'file') {
    const service = keyringService(opts.home);
    if (probeKeyring(service)) {
      opts.logger?.info({ vault: 'keyring' }, 'vault: OS keyring');
      return new KeyringVault(service);
    }
    if (opts.backend === 'keyring') throw new Error('SVC_VAULT_BACKEND=keyring but the OS keyring is not available');
    opts.logger?.info('vault: no OS keyring available, using the file vault');
  }
  const vault = FileVault.open(opts.file, opts.passphrase, opts.scrypt);
  if (vault.warning) opts.logger?.warn({ vault: vault.kind }, `vault: ${vault.warning}`);
  else opts.logger?.info({ vault: vault.kind }, 'vault: file');
  return vault;
}
