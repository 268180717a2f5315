// Node-only code of @svc/shared (imports node:*); the browser-safe code is in `..`.
export * from './ed25519.js';
export {
  deriveIdentityKeys,
  nativeEnvelope,
  openEnvelope,
  sealEnvelope,
  verifyEnvelope,
} from './envelope.js';
export {
  aeadOpen,
  aeadSeal,
  hpkeContextOpen,
  hpkeContextSeal,
  hpkeDeriveKeyPair,
  hpkeOpenBase,
  hpkeSealBase,
  hpkeSetupBaseR,
  hpkeSetupBaseS,
  nativeHpke,
  x25519Generate,
  x25519PublicFromPrivate,
} from './hpke.js';
