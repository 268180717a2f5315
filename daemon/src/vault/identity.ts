/**
 * Agent secrets in the vault: the 32-byte identity seed (Ed25519 private key; X25519 is
 * derived from it with a rotation counter) and the relay API key. Private keys are
 * derived in memory when needed and never leave the daemon.
 */
import { randomBytes } from 'node:crypto';
import type { IdentityKeys } from '@svc/shared';
import { deriveIdentityKeys } from '@svc/shared/node';
import { DaemonError } from '../errors.js';
import type { Vault } from './types.js';

const seedKey = (agent: string) => `agent/${agent}/seed`;
const apiKeyKey = (agent: string) => `agent/${agent}/api_key`;

export function newSeed(): Uint8Array {
  return new Uint8Array(randomBytes(32));
}

export function storeSeed(vault: Vault, agent: string, seed: Uint8Array): void {
  vault.set(seedKey(agent), Buffer.from(seed).toString('base64url'));
}

export function loadSeed(vault: Vault, agent: string): Uint8Array {
  const text = vault.get(seedKey(agent));
  if (text === undefined) {
    throw new DaemonError('vault_locked', `The vault holds no identity for agent ${agent}; re-register it.`, {
      status: 500,
    });
  }
  return new Uint8Array(Buffer.from(text, 'base64url'));
}

export function loadKeys(vault: Vault, agent: string, rotation: number): IdentityKeys {
  return deriveIdentityKeys(loadSeed(vault, agent), rotation);
}

export function storeApiKey(vault: Vault, agent: string, apiKey: string): void {
  vault.set(apiKeyKey(agent), apiKey);
}

export function loadApiKey(vault: Vault, agent: string): string | undefined {
  return vault.get(apiKeyKey(agent));
}

export function forgetAgentSecrets(vault: Vault, agent: string): void {
  vault.delete(seedKey(agent));
  vault.delete(apiKeyKey(agent));
}
