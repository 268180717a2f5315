import { spawn } from 'node:child_process';
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { privateKeyFromRaw, rawPair, rawPublic } from './key-objects.js';

const generatePrivateKey = (c: 'x25519') => privateKeyFromRaw(c, randomBytes(32));

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '../../..');

describe('private keys from raw bytes', () => {
  it('give the public key the curve defines (checked against @noble), for both curves', () => {
    for (let i = 0; i < 20; i++) {
      const raw = randomBytes(32);
      expect(Buffer.from(rawPublic(createPublicKey(privateKeyFromRaw('x25519', raw))))).toEqual(
        Buffer.from(x25519.getPublicKey(raw)),
      );
      expect(Buffer.from(rawPublic(createPublicKey(privateKeyFromRaw('ed25519', raw))))).toEqual(
        Buffer.from(ed25519.getPublicKey(raw)),
      );
    }
  });

  it('are the same key as the PKCS#8 import (the fallback)', () => {
    const raw = randomBytes(32);
    const der = Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), raw]);
    const viaDer = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    expect(privateKeyFromRaw('x25519', raw).equals(viaDer)).toBe(true);
  });

  it('generatePrivateKey gives a new, complete key each time', () => {
    const a = rawPair(generatePrivateKey('x25519'));
    const b = rawPair(generatePrivateKey('x25519'));
    expect(Buffer.from(a.privateKey).equals(Buffer.from(b.privateKey))).toBe(false);
    expect(Buffer.from(a.publicKey)).toEqual(Buffer.from(x25519.getPublicKey(a.privateKey)));
  });
});

/** Every non-test TypeScript source file of the product's packages. */
function productSources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'test') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...productSources(path));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

describe('key generation never uses a key-generation job (Node 20 deadlock)', () => {
  it('no product source calls generateKeyPairSync', () => {
    const offenders = ['shared', 'relay', 'daemon', 'cli', 'tui', 'desktop']
      .flatMap((pkg) => productSources(join(root, pkg, 'src')))
      .filter((file) => /\bgenerateKeyPair(Sync)?\s*\(/.test(readFileSync(file, 'utf8')));
    expect(offenders).toEqual([]);
  });

  it('sealing and key generation in a tight loop under constant GC finish (they used to hang)', async () => {
    // With generateKeyPairSync this loop deadlocked within a few thousand iterations (1,500
    // to 3,500 in tries here): the collector freed a key-generation job while a JWK export
    // of its key held their lock. A count, not a duration: the same work on any machine;
    // 6,000 is well past the latest hang seen.
    const script = `
      import { ed25519Generate, nativeHpke, x25519Generate } from './src/node/index.ts';
      const r = x25519Generate();
      let n = 0;
      while (n < 6000) {
        x25519Generate(); ed25519Generate();
        nativeHpke.sealBase(r.publicKey, new Uint8Array(8), new Uint8Array(0), new Uint8Array(64));
        n++;
      }
      console.log(n);
    `;
    const child = spawn(
      process.execPath,
      ['--max-semi-space-size=1', '--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: join(root, 'shared'), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    const code = await new Promise<number | string>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve('hung');
      }, 30_000);
      child.once('exit', (c) => {
        clearTimeout(timer);
        resolve(c ?? -1);
      });
    });
    expect(code, out).toBe(0);
    expect(Number(out.trim())).toBe(6000);
  }, 40_000);
});
