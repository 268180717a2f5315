/**
 * Envelope round trip (seal + sign + verify + open, 1 KiB body): the project's node:crypto
 * implementation against the bare node:crypto calls it is built from (same X25519
 * keygen + two DHs, RFC 9180 labeled HKDF steps via HMAC, ChaCha20-Poly1305, Ed25519
 * sign/verify), interleaved in short slices to even out noise. The @noble (browser)
 * rate is printed for information. Last line: `envelope/native ratio: R`.
 *
 *   npm run bench:crypto
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  type KeyObject,
  randomBytes,
  sign,
  verify,
} from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  createEnvelopeHeader,
  type EnvelopeApi,
  EXPAND_COUNTER_1,
  envelopeInfo,
  headerCanonicalJson,
  LABEL,
  nobleEnvelope,
} from '../shared/src/envelope/index.js';
import { ed25519Generate, nativeEnvelope, x25519Generate } from '../shared/src/node/index.js';
import { median } from './common.js';

const BODY = new Uint8Array(1024).map((_, i) => (i * 31) & 0xff);
const sender = ed25519Generate();
const recipient = x25519Generate();
const header = createEnvelopeHeader({
  sender: 'agent-a',
  recipient: 'agent-b',
  conversation_id: 'conv-1',
  conversation_type: 'direct',
  content_type: 'text',
  deployment_id: 'dep-bench',
  tenant_id: 'tenant-bench',
});
const openOptions = {
  expectedRecipient: 'agent-b',
  expectedDeploymentId: 'dep-bench',
  expectedTenantId: 'tenant-bench',
};

function envelopeRoundTrip(api: EnvelopeApi): () => void {
  return () => {
    const env = api.sealEnvelope({
      header,
      plaintext: BODY,
      recipientX25519Public: recipient.publicKey,
      senderEd25519Private: sender.privateKey,
    });
    if (!api.verifyEnvelope(env, sender.publicKey)) throw new Error('verify failed');
    const out = api.openEnvelope(env, recipient.privateKey, openOptions);
    if (out.length !== BODY.length) throw new Error('open failed');
  };
}

// ---- baseline: the bare node:crypto calls, keys parsed once, nothing else. Public keys
// travel as JWK `x` (base64url), the fastest node:crypto path for them, as in the project.
const der = (prefix: number[], raw: Uint8Array) => Buffer.concat([Buffer.from(prefix), raw]);
const X25519_SPKI = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x03, 0x21, 0x00];
const X25519_PKCS8 = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20];
const ED25519_SPKI = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];
const ED25519_PKCS8 = [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
const pkR: KeyObject = createPublicKey({ key: der(X25519_SPKI, recipient.publicKey), format: 'der', type: 'spki' });
const skR: KeyObject = createPrivateKey({ key: der(X25519_PKCS8, recipient.privateKey), format: 'der', type: 'pkcs8' });
const signKey = createPrivateKey({ key: der(ED25519_PKCS8, sender.privateKey), format: 'der', type: 'pkcs8' });
const verifyKey = createPublicKey({ key: der(ED25519_SPKI, sender.publicKey), format: 'der', type: 'spki' });
const pkRRaw = Buffer.from(recipient.publicKey);
const aad = Buffer.from(headerCanonicalJson(header));
const EMPTY = Buffer.alloc(0);
const hmac = (key: Uint8Array, ...parts: Uint8Array[]): Buffer => {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest();
};
// key_schedule_context depends only on info: computed once, as the implementation caches it.
const ksc = Buffer.concat([
  Buffer.of(0),
  hmac(EMPTY, LABEL.pskIdHash),
  hmac(EMPTY, LABEL.infoHash, envelopeInfo('dep-bench', 'tenant-bench')),
]);
function schedule(dh: Buffer, enc: Uint8Array): { key: Buffer; nonce: Buffer } {
  const eaePrk = hmac(EMPTY, LABEL.eaePrk, dh);
  const shared = hmac(eaePrk, LABEL.sharedSecret, enc, pkRRaw, EXPAND_COUNTER_1);
  const secret = hmac(shared, LABEL.secret);
  return {
    key: hmac(secret, LABEL.key, ksc, EXPAND_COUNTER_1),
    nonce: hmac(secret, LABEL.baseNonce, ksc, EXPAND_COUNTER_1).subarray(0, 12),
  };
}
/** Node does not read `x` of a private OKP JWK: the public key is derived from `d`. */
const UNREAD_X = 'A'.repeat(43);
function bareRoundTrip(): void {
  // seal + sign
  // An ephemeral key from 32 random bytes, as the implementation does (generateKeyPairSync
  // can deadlock Node 20 under GC, docs/decisions.md); a JWK import is the fast raw-key path.
  const d = randomBytes(32).toString('base64url');
  const ephPrivate = createPrivateKey({ key: { kty: 'OKP', crv: 'X25519', d, x: UNREAD_X }, format: 'jwk' });
  const encText = createPublicKey(ephPrivate).export({ format: 'jwk' }).x as string;
  const enc = Buffer.from(encText, 'base64url');
  const s = schedule(diffieHellman({ privateKey: ephPrivate, publicKey: pkR }), enc);
  const cipher = createCipheriv('chacha20-poly1305', s.key, s.nonce, { authTagLength: 16 });
  cipher.setAAD(aad, { plaintextLength: BODY.length });
  const ct = Buffer.concat([cipher.update(BODY), cipher.final(), cipher.getAuthTag()]);
  const signed = Buffer.concat([aad, enc, ct]);
  const sig = sign(null, signed, signKey);
  // verify
  if (!verify(null, signed, verifyKey, sig)) throw new Error('verify failed');
  // open
  const epk = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: encText }, format: 'jwk' });
  const r = schedule(diffieHellman({ privateKey: skR, publicKey: epk }), enc);
  const decipher = createDecipheriv('chacha20-poly1305', r.key, r.nonce, { authTagLength: 16 });
  decipher.setAuthTag(ct.subarray(ct.length - 16));
  decipher.setAAD(aad, { plaintextLength: ct.length - 16 });
  const out = decipher.update(ct.subarray(0, ct.length - 16));
  decipher.final();
  if (out.length !== BODY.length) throw new Error('open failed');
}

/** Runs `fn` for `ms` of wall time; returns round trips per second of this process's CPU time. */
function runFor(fn: () => void, ms: number): number {
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  let ops = 0;
  while (performance.now() - start < ms) {
    fn();
    ops++;
  }
  const cpu = process.cpuUsage(cpu0);
  return (ops * 1e6) / (cpu.user + cpu.system);
}
const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

const project = envelopeRoundTrip(nativeEnvelope);
const noble = envelopeRoundTrip(nobleEnvelope);

// Warm up (JIT, key caches). Then alternate 100 ms slices, flipping the order every pair,
// ~2.5 s each. Rates are per CPU second of this process (time other processes take from
// the core does not count) and each figure is the median over slices, so a burst of
// background load cannot skew the ratio; R is the median of the per-pair ratios.
for (let i = 0; i < 4; i++) {
  runFor(project, 100);
  runFor(bareRoundTrip, 100);
}
runFor(noble, 300);

const SLICE_MS = 100;
const PAIRS = 25;
const envRates: number[] = [];
const bareRates: number[] = [];
const ratios: number[] = [];
for (let i = 0; i < PAIRS; i++) {
  let e: number;
  let b: number;
  if (i % 2 === 0) {
    e = runFor(project, SLICE_MS);
    b = runFor(bareRoundTrip, SLICE_MS);
  } else {
    b = runFor(bareRoundTrip, SLICE_MS);
    e = runFor(project, SLICE_MS);
  }
  envRates.push(e);
  bareRates.push(b);
  ratios.push(e / b);
}
const nobleRates: number[] = [];
for (let i = 0; i < 8; i++) nobleRates.push(runFor(noble, 250));

console.log('1 KiB body, seal + sign + verify + open, one core (median of 100 ms slices, per CPU second)');
console.log(`envelope (node:crypto, project):  ${fmt(median(envRates))} round trips/s`);
console.log(`bare node:crypto calls:           ${fmt(median(bareRates))} round trips/s`);
console.log(`envelope (@noble, browser build): ${fmt(median(nobleRates))} round trips/s (information)`);
console.log(`envelope/native ratio: ${median(ratios).toFixed(2)}`);
