/**
 * The key checks of every route that takes an agent's public keys (enrollment and key
 * rotation), over the base64url text that travels in requests. Each answers why a key
 * is refused, or undefined; none throws, so a malformed key can never become a 500.
 */
import { ed25519PublicKeyProblem, fromBase64url, x25519PublicKeyProblem } from '@svc/shared';

/** Decodes canonical base64url (the decoder refuses any other encoding) of exactly `length` bytes. */
export function canonicalBytes(text: string, length: number): Uint8Array | undefined {
  try {
    const bytes = fromBase64url(text);
    return bytes.length === length ? bytes : undefined;
  } catch {
    return undefined;
  }
}

function problemOf(text: string, check: (bytes: Uint8Array) => string | undefined): string | undefined {
  const bytes = canonicalBytes(text, 32);
  return bytes === undefined ? 'not 32 bytes of canonical base64url' : check(bytes);
}

/** An Ed25519 signing key: the canonical encoding of a prime-order point other than the identity. */
export const signingKeyProblem = (text: string): string | undefined => problemOf(text, ed25519PublicKeyProblem);

/** An X25519 encryption key: canonical and not a small-order point. */
export const encryptionKeyProblem = (text: string): string | undefined => problemOf(text, x25519PublicKeyProblem);
