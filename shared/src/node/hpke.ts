/**
 * RFC 9180 HPKE of the one suite on native node:crypto: the primitives only; the key
 * schedule is `../envelope/hpke-core.ts`, shared with the @noble build, with the same
 * API and bytes. node's hkdf() does Extract and Expand together, so the labeled steps are
 * HMAC-SHA256 directly (every output fits one SHA-256 block).
 */
import { createCipheriv, createDecipheriv, createHmac, createPublicKey, diffieHellman } from 'node:crypto';
import { createHpke } from '../envelope/hpke-core.js';
import { type KeyPair, N_T } from '../envelope/hpke-suite.js';
import {
  cachedPrivateKey,
  cachedPublicKey,
  generatePrivateKey,
  privateKeyFromRaw,
  publicKeyFromRaw,
  rawPair,
  rawPublic,
  view,
} from './key-objects.js';

function aeadSeal(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  const cipher = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: N_T });
  cipher.setAAD(aad, { plaintextLength: plaintext.length });
  const body = cipher.update(plaintext);
  cipher.final();
  const out = Buffer.allocUnsafe(body.length + N_T);
  body.copy(out, 0);
  cipher.getAuthTag().copy(out, body.length);
  return view(out);
}

/** Throws when the tag does not match (the HPKE layer makes that `envelope_decrypt_failed`). */
function aeadOpen(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, ciphertext: Uint8Array): Uint8Array {
  const bodyLength = ciphertext.length - N_T;
  const decipher = createDecipheriv('chacha20-poly1305', key, nonce, { authTagLength: N_T });
  decipher.setAuthTag(ciphertext.subarray(bodyLength));
  decipher.setAAD(aad, { plaintextLength: bodyLength });
  const body = decipher.update(ciphertext.subarray(0, bodyLength));
  decipher.final();
  return view(body);
}

export function x25519Generate(): KeyPair {
  return rawPair(generatePrivateKey('x25519'));
}

export function x25519PublicFromPrivate(privateKey: Uint8Array): Uint8Array {
  return cachedPrivateKey('x25519', privateKey).publicRaw;
}

export const nativeHpke = createHpke({
  hmac(key, ...parts) {
    const mac = createHmac('sha256', key);
    for (const part of parts) mac.update(part);
    return view(mac.digest());
  },
  encapDh(recipientPublic, ephemeralPrivate) {
    const skE =
      ephemeralPrivate === undefined ? generatePrivateKey('x25519') : privateKeyFromRaw('x25519', ephemeralPrivate);
    const publicKey = cachedPublicKey('x25519', recipientPublic);
    return { enc: rawPublic(createPublicKey(skE)), dh: diffieHellman({ privateKey: skE, publicKey }) };
  },
  decapDh(enc, recipientPrivate) {
    const skR = cachedPrivateKey('x25519', recipientPrivate);
    // the ephemeral public key is new every time: parse it, never cache it
    const dh = diffieHellman({ privateKey: skR.key, publicKey: publicKeyFromRaw('x25519', enc) });
    return { dh, recipientPublic: skR.publicRaw };
  },
  x25519PublicFromPrivate: (privateKey) => rawPublic(createPublicKey(privateKeyFromRaw('x25519', privateKey))),
  aeadSeal,
  aeadOpen,
});
