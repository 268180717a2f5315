/** A small secret store: identity seeds and API keys, keyed by `agent/<name>/<what>`. */
export type VaultKind = 'keyring' | 'file-encrypted' | 'file-plain';

export interface Vault {
  readonly kind: VaultKind;
  /** shown in DaemonStatus.vault.warning (plain file, locked file vault) */
  readonly warning?: string;
  /** true when no secret can be read (a wrong or missing passphrase, an unreachable keyring): no agent can sign in */
  readonly locked?: boolean;
  get(key: string): string | undefined;
  set(key: string, value: string): void;
  delete(key: string): void;
}
