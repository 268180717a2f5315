/** Ed25519 checks over the base64url keys and signatures that travel in relay requests. */
import { fromBase64url } from '@svc/shared';
import { ed25519Verify } from '@svc/shared/node';

/** False for a bad signature and for any malformed key or signature; never throws. */
export function verifyEd25519(publicKeyB64url: string, data: Uint8Array, signatureB64url: string): boolean {
  try {
    return ed25519Verify(fromBase64url(publicKeyB64url), data, fromBase64url(signatureB64url));
  } catch {
    return false; // not base64url
  }
}
