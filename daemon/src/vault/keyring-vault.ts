/**
 * The OS keyring through @napi-rs/keyring. One service per SVC_HOME (two homes on one
 * machine, as in tests, never share entries). Headless machines have no secret service:
 * the probe fails with "Couldn't access platform storage" and the daemon falls back to
 * the file vault.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Entry } from '@napi-rs/keyring';
import type { Vault } from './types.js';

export function keyringService(home: string): string {
  return `svc:${createHash('sha256').update(home).digest('hex').slice(0, 16)}`;
}

/** True when the keyring can store, return and delete an entry. Never throws. */
export function probeKeyring(service: string): boolean {
  try {
    const entry = new Entry(service, `probe-${randomBytes(6).toString('hex')}`);
    const value = randomBytes(8).toString('hex');
    entry.setPassword(value);
    const ok = entry.getPassword() === value;
    entry.deletePassword();
    return ok;
  } catch {
    return false;
  }
}

export class KeyringVault implements Vault {
  readonly kind = 'keyring' as const;
  readonly #service: string;

  constructor(service: string) {
    this.#service = service;
  }

  get(key: string): string | undefined {
    return new Entry(this.#service, key).getPassword() ?? undefined;
  }

  set(key: string, value: string): void {
    new Entry(this.#service, key).setPassword(value);
  }

  delete(key: string): void {
    try {
      new Entry(this.#service, key).deletePassword();
    } catch {
      // no such entry: nothing to delete
    }
  }
}
