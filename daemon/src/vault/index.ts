/**
 * Chooses the vault: an existing vault.json keeps its kind (moving secrets silently
 * between stores would surprise the owner); otherwise the OS keyring when it works, then
 * an encrypted file vault when SVC_VAULT_PASSPHRASE is set, then a plain 0600 file with
 * a warning. Choosing the keyring writes vault.json as a pin naming it, so a start on
 * which the keyring is unreachable (no session bus, a locked collection) gives a locked
 * vault that says where the secrets are, instead of an empty file vault that would hide
 * them from then on.
 */
import type { Logger } from 'pino';
import { DaemonError } from '../errors.js';
import { FileVault, fileVaultKind, pinKeyring } from './file-vault.js';
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
  /**
   * Agents are registered in this home. With no vault.json, their secrets can only be in
   * the OS keyring (a home from before the pin): an unreachable keyring then locks the
   * vault instead of starting an empty file vault.
   */
  hasAgents?: boolean;
  /** The keyring check; the OS keyring's own by default. */
  probe?: (service: string) => boolean;
}

export const KEYRING_UNREACHABLE =
  "the agents' secrets are in the OS keyring, which is not reachable now: start the secret service (a desktop session, or gnome-keyring-daemon under dbus) and restart the daemon";

/** The keyring holding the secrets is not reachable: every access says so. */
class UnreachableKeyringVault implements Vault {
  readonly kind = 'keyring' as const;
  readonly warning = KEYRING_UNREACHABLE;
  readonly locked = true;
  #fail(): never {
    throw new DaemonError('vault_locked', `The vault is locked: ${KEYRING_UNREACHABLE}.`);
  }
  get(): string | undefined {
    this.#fail();
  }
  set(): void {
    this.#fail();
  }
  delete(): void {
    this.#fail();
  }
}

export function openVault(opts: OpenVaultOptions): Vault {
  const existing = fileVaultKind(opts.file);
  // the keyring service a pin names: the secrets are there, whatever the backend setting
  const pinned = existing?.kind === 'keyring' ? existing.service : undefined;
  if (pinned !== undefined && opts.backend === 'file') {
    opts.logger?.warn('vault: SVC_VAULT_BACKEND=file ignored; the secrets are in the OS keyring');
  }
  if (pinned !== undefined || (existing === undefined && opts.backend !== 'file')) {
    const service = pinned ?? keyringService(opts.home);
    if ((opts.probe ?? probeKeyring)(service)) {
      if (pinned === undefined) pinKeyring(opts.file, service);
      opts.logger?.info({ vault: 'keyring' }, 'vault: OS keyring');
      return new KeyringVault(service);
    }
    if (pinned === undefined && opts.backend === 'keyring') {
      throw new Error('SVC_VAULT_BACKEND=keyring but the OS keyring is not available');
    }
    if (pinned !== undefined || opts.hasAgents) {
      opts.logger?.warn({ vault: 'keyring' }, `vault: ${KEYRING_UNREACHABLE}`);
      return new UnreachableKeyringVault();
    }
    opts.logger?.info('vault: no OS keyring available, using the file vault');
  }
  const vault = FileVault.open(opts.file, opts.passphrase, opts.scrypt);
  if (vault.warning) opts.logger?.warn({ vault: vault.kind }, `vault: ${vault.warning}`);
  else opts.logger?.info({ vault: vault.kind }, 'vault: file');
  return vault;
}
