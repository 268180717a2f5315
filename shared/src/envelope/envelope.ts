/**
 * Envelope v1 seal / verify / open on @noble/* (browser-safe; the dashboard page uses
 * it). `../node/envelope.ts` is the node:crypto twin with the same API and bytes.
 */
import { fromBase64url, toBase64url, utf8 } from '../base64url.js';
import { type EnvelopeApi, envelopeInfo } from './format.js';
import { nobleHpke } from './hpke.js';
import { ed25519Sign, ed25519Verify } from './keys.js';
import { createEnvelopeApi } from './orchestrate.js';

/** The @noble build: seal, verify and open on the primitives below. */
export const nobleEnvelope: EnvelopeApi = createEnvelopeApi({
  sealBase: nobleHpke.sealBase,
  openBase: nobleHpke.openBase,
  sign: ed25519Sign,
  verify: ed25519Verify,
  info: envelopeInfo,
  bytes: utf8,
  toBase64url,
  fromBase64url,
});

export const { sealEnvelope, verifyEnvelope, openEnvelope } = nobleEnvelope;
