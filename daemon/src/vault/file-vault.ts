/**
 * The file vault ($SVC_HOME/vault.json, mode 0600) for machines without a keyring.
 * Encrypted form: AES-256-GCM under a key that scrypt derives from SVC_VAULT_PASSPHRASE;
 * the whole entry map is one ciphertext, so entry names do not leak either. Plain form:
 * the same map in clear, used only when neither a keyring nor a passphrase is available,
 * and reported as a warning; the first open with a passphrase encrypts it (one atomic
 * write). Writes go to a temp file and rename, so a crash never leaves a half-written
 * vault. The KDF parameters stored in the file are never taken below the ones the daemon
 * creates vaults with (scrypt N = 2^15, r = 8) nor above a ceiling: a vault file cannot
 * weaken its own key derivation, or exhaust memory.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { DaemonError } from '../errors.js';
import { restrictExisting } from '../private-file.js';
import type { Vault, VaultKind } from './types.js';

interface ScryptParams {
  N: number;
  r: number;
  p: number;
  salt: string;
}
interface EncryptedFile {
  v: 1;
  kind: 'file-encrypted';
  kdf: { name: 'scrypt' } & ScryptParams;
  cipher: 'aes-256-gcm';
  nonce: string;
  ciphertext: string;
  tag: string;
}
interface PlainFile {
  v: 1;
  kind: 'file-plain';
  entries: Record<string, string>;
}
/**
 * Written when the OS keyring is chosen: the secrets are in the keyring, under `service`,
 * and a later start without a reachable keyring must say so instead of starting an empty
 * file vault beside them.
 */
interface KeyringPin {
  v: 1;
  kind: 'keyring';
  service: string;
}
type VaultFile = EncryptedFile | PlainFile;

export const PLAIN_VAULT_WARNING =
  'secrets are stored unencrypted in vault.json (mode 0600): no OS keyring and no SVC_VAULT_PASSPHRASE; set it, run `svc stop`, and the next start encrypts the vault';
/** Why an encrypted vault is locked: opened without a passphrase, or with one that does not open it. */
const NO_PASSPHRASE =
  'it is encrypted and the daemon started without SVC_VAULT_PASSPHRASE; set it, run `svc stop`, and start again';
const WRONG_PASSPHRASE =
  'SVC_VAULT_PASSPHRASE does not open it (wrong passphrase, or vault.json was altered); set the right one, run `svc stop`, and start again';

/** Default scrypt cost: 2^15 × 8 × 128 B = 32 MiB, about 0.1 s once per daemon start. */
export const DEFAULT_SCRYPT = { N: 2 ** 15, r: 8, p: 1 };

/** Above this memory cost (1 GiB) a vault file's parameters are refused, not tried. */
const SCRYPT_MAX_MEMORY = 2 ** 30;

/**
 * Why the parameters read from a vault file are refused, if they are: below `floor` (the
 * cost vaults are created with), over the memory ceiling, malformed, or a short salt.
 */
function weakKdf(kdf: Partial<ScryptParams>, floor: { N: number; r: number; p: number }): string | undefined {
  const { N, r, p, salt } = kdf;
  if (!Number.isSafeInteger(N) || !Number.isSafeInteger(r) || !Number.isSafeInteger(p)) return 'malformed';
  const n = N as number;
  if (n < floor.N || (r as number) < floor.r || (p as number) < floor.p) return 'below the minimum cost';
  if ((n & (n - 1)) !== 0 || 128 * n * (r as number) > SCRYPT_MAX_MEMORY || (p as number) > 16) {
    return 'out of range';
  }
  if (typeof salt !== 'string' || Buffer.from(salt, 'base64url').length < 16) return 'salt too short';
  return undefined;
}

function deriveKey(passphrase: string, params: ScryptParams): Buffer {
  return scryptSync(passphrase, Buffer.from(params.salt, 'base64url'), 32, {
    N: params.N,
    r: params.r,
    p: params.p,
    maxmem: 256 * params.N * params.r,
  });
}

/**
 * What kind of vault the file names, or undefined when there is none; for the keyring,
 * also the keyring service holding the secrets.
 */
export function fileVaultKind(path: string): { kind: VaultKind; service?: string } | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<VaultFile | KeyringPin>;
    if (parsed.kind === 'keyring' && typeof parsed.service === 'string') {
      return { kind: 'keyring', service: parsed.service };
    }
    return { kind: parsed.kind === 'file-plain' ? 'file-plain' : 'file-encrypted' };
  } catch {
    return { kind: 'file-encrypted' };
  }
}

/** Records that the secrets of this home live in the OS keyring, under `service`. */
export function pinKeyring(path: string, service: string): void {
  writeAtomic(path, { v: 1, kind: 'keyring', service });
}

function writeAtomic(path: string, data: VaultFile | KeyringPin): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(data)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

export class FileVault implements Vault {
  readonly kind: VaultKind;
  readonly warning?: string;
  readonly #path: string;
  #entries: Record<string, string>;
  #key?: Buffer;
  #kdf?: ScryptParams;
  #locked: boolean;
  #lockedBecause?: string;

  private constructor(
    path: string,
    kind: VaultKind,
    entries: Record<string, string>,
    locked: boolean,
    lockedBecause?: string,
  ) {
    this.#path = path;
    this.kind = kind;
    this.#entries = entries;
    this.#locked = locked;
    if (kind === 'file-plain') this.warning = PLAIN_VAULT_WARNING;
    else if (locked) {
      this.warning = `the file vault is locked: ${lockedBecause}`;
      this.#lockedBecause = lockedBecause;
    }
  }

  /**
   * Opens (or creates) the vault at `path`. With a passphrase the vault is encrypted; a
   * wrong passphrase, or an encrypted vault without one, gives a locked vault whose every
   * access throws `vault_locked` (the daemon still starts and says so in its status).
   */
  static open(path: string, passphrase: string | undefined, scrypt = DEFAULT_SCRYPT): FileVault {
    restrictExisting(path);
    const existing = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    if (existing === undefined) {
      if (passphrase === undefined) {
        const v = new FileVault(path, 'file-plain', {}, false);
        v.#save();
        return v;
      }
      const v = new FileVault(path, 'file-encrypted', {}, false);
      v.#kdf = { ...scrypt, salt: randomBytes(16).toString('base64url') };
      v.#key = deriveKey(passphrase, v.#kdf);
      v.#save();
      return v;
    }
    let file: VaultFile | KeyringPin;
    try {
      file = JSON.parse(existing) as VaultFile | KeyringPin;
    } catch (cause) {
      throw new DaemonError('config_invalid', `the vault file ${path} is damaged`, { cause });
    }
    if (file.kind === 'keyring') throw new Error(`${path} names the OS keyring, not a file vault`);
    if (file.kind === 'file-plain') {
      if (passphrase === undefined) return new FileVault(path, 'file-plain', { ...file.entries }, false);
      // a passphrase is set now: the plain vault becomes encrypted, in one atomic write
      const v = new FileVault(path, 'file-encrypted', { ...file.entries }, false);
      v.#kdf = { ...scrypt, salt: randomBytes(16).toString('base64url') };
      v.#key = deriveKey(passphrase, v.#kdf);
      v.#save();
      return v;
    }
    if (passphrase === undefined) return new FileVault(path, 'file-encrypted', {}, true, NO_PASSPHRASE);
    const weak = weakKdf(file.kdf ?? {}, scrypt);
    if (weak !== undefined) {
      return new FileVault(
        path,
        'file-encrypted',
        {},
        true,
        `the vault's key derivation parameters are refused (${weak}); restore vault.json from a backup`,
      );
    }
    const kdf: ScryptParams = { N: file.kdf.N, r: file.kdf.r, p: file.kdf.p, salt: file.kdf.salt };
    const key = deriveKey(passphrase, kdf);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(file.nonce, 'base64url'));
      decipher.setAuthTag(Buffer.from(file.tag, 'base64url'));
      const plain = Buffer.concat([decipher.update(Buffer.from(file.ciphertext, 'base64url')), decipher.final()]);
      const v = new FileVault(path, 'file-encrypted', JSON.parse(plain.toString('utf8')), false);
      v.#key = key;
      v.#kdf = kdf;
      return v;
    } catch {
      // GCM authentication fails: the passphrase is wrong (or the file was altered).
      return new FileVault(path, 'file-encrypted', {}, true, WRONG_PASSPHRASE);
    }
  }

  get locked(): boolean {
    return this.#locked;
  }

  #check(): void {
    if (this.#locked) {
      throw new DaemonError('vault_locked', `The file vault is locked: ${this.#lockedBecause}.`);
    }
  }

  #save(): void {
    if (this.kind === 'file-plain') {
      writeAtomic(this.#path, { v: 1, kind: 'file-plain', entries: this.#entries });
      return;
    }
    const key = this.#key as Buffer;
    const kdf = this.#kdf as ScryptParams;
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(this.#entries), 'utf8'), cipher.final()]);
    writeAtomic(this.#path, {
      v: 1,
      kind: 'file-encrypted',
      kdf: { name: 'scrypt', ...kdf },
      cipher: 'aes-256-gcm',
      nonce: nonce.toString('base64url'),
      ciphertext: ciphertext.toString('base64url'),
      tag: cipher.getAuthTag().toString('base64url'),
    });
  }

  get(key: string): string | undefined {
    this.#check();
    return Object.hasOwn(this.#entries, key) ? this.#entries[key] : undefined;
  }

  set(key: string, value: string): void {
    this.#check();
    this.#entries[key] = value;
    this.#save();
  }

  delete(key: string): void {
    this.#check();
    if (!Object.hasOwn(this.#entries, key)) return;
    delete this.#entries[key];
    this.#save();
  }
}
