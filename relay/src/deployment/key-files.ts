/** Ed25519 key files (private JWK, 0600) for the deployment signer and the relay key. */
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { generatePrivateKey } from '@svc/shared/node';
import type { JWK } from 'jose';

export interface Ed25519KeyFile {
  kid: string;
  jwk: JWK & { kty: 'OKP'; crv: 'Ed25519'; x: string; d: string };
  created_at: string;
}

export interface LoadedKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicJwk: JWK;
}

/** kid = first 16 bytes of SHA-256 over the public key, base64url: stable and collision-safe. */
const kidOf = (x: string): string => createHash('sha256').update(x).digest('base64url').slice(0, 22);

export function generateKeyFile(path: string): Ed25519KeyFile {
  const privateKey = generatePrivateKey('ed25519');
  const jwk = privateKey.export({ format: 'jwk' }) as Ed25519KeyFile['jwk'];
  const file: Ed25519KeyFile = { kid: kidOf(jwk.x), jwk, created_at: new Date().toISOString() };
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  return file;
}

export function readKeyFile(path: string): LoadedKey {
  const file = JSON.parse(readFileSync(path, 'utf8')) as Ed25519KeyFile;
  const privateKey = createPrivateKey({ key: file.jwk, format: 'jwk' });
  return {
    kid: file.kid,
    privateKey,
    publicKey: createPublicKey(privateKey),
    publicJwk: { kty: 'OKP', crv: 'Ed25519', x: file.jwk.x },
  };
}

export const keyFileExists = (path: string): boolean => existsSync(path);
