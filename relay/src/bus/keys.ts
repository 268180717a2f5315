import {
  createHmac,
  createPublicKey,
  type KeyObject,
  randomBytes,
  sign as signNative,
  verify as verifyNative,
} from 'node:crypto';
import { chmod, link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createAccount, createOperator, createUser, fromSeed, type KeyPair, Prefix } from '@nats-io/nkeys';
// the seed encoder (prefix, checksum, base32), not on the package's entry point
import { Codec } from '@nats-io/nkeys/lib/codec.js';
import { privateKeyFromRaw } from '@svc/shared/node';

export type KeyKind = 'operator' | 'account' | 'user';

// The first letter of an encoded seed after 'S' names the key type (SO…, SA…, SU…).
const SEED_PREFIX: Record<KeyKind, string> = { operator: 'SO', account: 'SA', user: 'SU' };
const CREATE: Record<KeyKind, () => KeyPair> = {
  operator: () => nativeKeyPair(createOperator()),
  account: () => nativeKeyPair(createAccount()),
  user: () => nativeKeyPair(createUser()),
};

/**
 * A key pair that signs and verifies with node:crypto's Ed25519, its public and private
 * keys worked out once. nkeys.js does both in JavaScript (tweetnacl) and derives the key pair from the seed
 * again at every call, public key included: publishing the uplink account of an edge at the
 * most sources a relay allows (an account JWT with 360 signed activations) held the relay's
 * event loop for 25 s on a 2-core machine. Ed25519 signatures are deterministic: the bytes
 * are the same. Sealing (curve keys) is left to nkeys.
 */
class NativeKeyPair implements KeyPair {
  readonly #kp: KeyPair;
  readonly #private: KeyObject;
  readonly #public: KeyObject;
  readonly #publicKey: string;
  #privateKey: Uint8Array | undefined;

  constructor(kp: KeyPair) {
    this.#kp = kp;
    this.#private = privateKeyFromRaw('ed25519', Codec.decodeSeed(kp.getSeed()).buf);
    this.#public = createPublicKey(this.#private);
    this.#publicKey = kp.getPublicKey();
  }

  getPublicKey(): string {
    return this.#publicKey;
  }

  /** (@nats-io/jwt asks for it at every signature, to check the key's kind) */
  getPrivateKey(): Uint8Array {
    this.#privateKey ??= this.#kp.getPrivateKey();
    return this.#privateKey.slice();
  }

  getSeed(): Uint8Array {
    return this.#kp.getSeed();
  }

  sign(input: Uint8Array): Uint8Array {
    return new Uint8Array(signNative(null, input, this.#private));
  }

  verify(input: Uint8Array, sig: Uint8Array): boolean {
    return verifyNative(null, input, this.#public, sig);
  }

  clear(): void {
    this.#privateKey?.fill(0);
    this.#kp.clear();
  }

  seal(input: Uint8Array, recipient: string, nonce?: Uint8Array): Uint8Array {
    return this.#kp.seal(input, recipient, nonce);
  }

  open(message: Uint8Array, sender: string): Uint8Array | null {
    return this.#kp.open(message, sender);
  }
}

/** An nkeys key pair (operator, account or user) that signs natively; see NativeKeyPair. */
export function nativeKeyPair(kp: KeyPair): KeyPair {
  return kp instanceof NativeKeyPair ? kp : new NativeKeyPair(kp);
}

/** Directories holding secrets are private to the relay's OS user. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/**
 * Writes a secret atomically with mode 0600: a crash mid-write must never leave a
 * truncated seed behind, because a lost seed means re-creating the account.
 */
export async function writeSecretFile(file: string, content: string): Promise<void> {
  await ensurePrivateDir(dirname(file));
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, content, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}

async function readIfExists(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Reads an nkey seed from a file and checks it is the expected kind of key. */
export async function readSeedFile(file: string, kind: KeyKind): Promise<KeyPair> {
  const text = await readIfExists(file);
  if (text === undefined) throw new Error(`nkey seed file not found: ${file}`);
  return parseSeed(text, kind, file);
}

function parseSeed(text: string, kind: KeyKind, file: string): KeyPair {
  const seed = text.trim();
  if (!seed.startsWith(SEED_PREFIX[kind])) {
    // Never echo the content: it may be a seed of another kind.
    throw new Error(
      `${file} does not hold ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} nkey seed (expected it to start with ${SEED_PREFIX[kind]})`,
    );
  }
  return nativeKeyPair(fromSeed(new TextEncoder().encode(seed)));
}

/**
 * Loads a persisted seed, or creates and persists a fresh one on first use. Several relay
 * instances on one data dir may start at once: the first seed written wins (a hard link
 * never replaces a file) and the others load it, so they all sign for the same account.
 */
export async function loadOrCreateSeed(file: string, kind: KeyKind): Promise<KeyPair> {
  const text = await readIfExists(file);
  if (text !== undefined) return parseSeed(text, kind, file);
  const kp = CREATE[kind]();
  await ensurePrivateDir(dirname(file));
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, `${seedString(kp)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  try {
    await link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return parseSeed(await readFile(file, 'utf8'), kind, file);
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  return kp;
}

export function seedString(kp: KeyPair): string {
  return new TextDecoder().decode(kp.getSeed());
}

/**
 * An account key derived from a secret seed and a label (HMAC-SHA256): every relay instance
 * holding the same seed derives the same account, so nothing new needs to be shared or
 * stored for it.
 */
export function deriveAccountKey(secret: KeyPair, label: string): KeyPair {
  const raw = createHmac('sha256', secret.getSeed()).update(`svc-derived-account/v1\0${label}`).digest();
  return nativeKeyPair(fromSeed(Codec.encodeSeed(Prefix.Account, raw)));
}
