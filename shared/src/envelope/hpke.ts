/**
 * RFC 9180 HPKE of the one suite (`hpke-suite.ts`) on @noble/* (browser-safe): the
 * primitives only; the key schedule is `hpke-core.ts`, shared with the node:crypto build
 * (`../node/hpke.ts`), and both give identical bytes.
 */
import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { x25519 } from '@noble/curves/ed25519.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { createHpke } from './hpke-core.js';
import { concatBytes } from './hpke-suite.js';

export const nobleHpke = createHpke({
  hmac: (key, ...parts) => hmac(sha256, key, concatBytes(...parts)),
  encapDh(recipientPublic, ephemeralPrivate) {
    const skE = ephemeralPrivate ?? x25519.utils.randomSecretKey();
    return { enc: x25519.getPublicKey(skE), dh: x25519.getSharedSecret(skE, recipientPublic) };
  },
  decapDh: (enc, recipientPrivate) => ({
    dh: x25519.getSharedSecret(recipientPrivate, enc),
    recipientPublic: x25519.getPublicKey(recipientPrivate),
  }),
  x25519PublicFromPrivate: (privateKey) => x25519.getPublicKey(privateKey),
  aeadSeal: (key, nonce, aad, plaintext) => chacha20poly1305(key, nonce, aad).encrypt(plaintext),
  aeadOpen: (key, nonce, aad, ciphertext) => chacha20poly1305(key, nonce, aad).decrypt(ciphertext),
});
