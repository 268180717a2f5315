// The envelope on both implementations: project vectors (exact bytes), cross-opening,
// identity derivation, key helpers, and refusal of every kind of tampering.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../canonical-json.js';
import { nobleEnvelope } from '../envelope/envelope.js';
import type { EnvelopeErrorCode } from '../envelope/errors.js';
import {
  decodeEnvelope,
  type Envelope,
  type EnvelopeApi,
  type EnvelopeHeader,
  encodeEnvelope,
  type OpenEnvelopeOptions,
} from '../envelope/format.js';
import * as nobleKeys from '../envelope/keys.js';
import { ReplayGuard } from '../envelope/replay-guard.js';
import * as nativeEd from './ed25519.js';
import { deriveIdentityKeys as nativeDerive, nativeEnvelope } from './envelope.js';
import { x25519Generate as nativeX25519Generate, x25519PublicFromPrivate as nativeX25519Public } from './hpke.js';

interface ProjectVectors {
  identities: {
    seed: string;
    rotation: number;
    signPrivate: string;
    signPublic: string;
    encPrivate: string;
    encPublic: string;
  }[];
  envelopes: {
    sender_seed: string;
    recipient_seed: string;
    recipient_rotation: number;
    ephemeral_private: string;
    header: EnvelopeHeader;
    plaintext_utf8: string;
    envelope: string;
  }[];
}

const file = new URL('../envelope/test-vectors/envelope-v1.json', import.meta.url);
const vectors = JSON.parse(readFileSync(file, 'utf8')) as ProjectVectors;
const hex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));
const toHex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

const implementations: [string, EnvelopeApi][] = [
  ['noble', nobleEnvelope],
  ['native', nativeEnvelope],
];
const derivers = [
  ['noble', nobleKeys.deriveIdentityKeys],
  ['native', nativeDerive],
] as const;

describe.each(derivers)('deriveIdentityKeys (%s)', (_name, derive) => {
  it('matches the checked-in identities', () => {
    for (const id of vectors.identities) {
      const keys = derive(hex(id.seed), id.rotation);
      expect(toHex(keys.signPrivate)).toBe(id.signPrivate);
      expect(toHex(keys.signPublic)).toBe(id.signPublic);
      expect(toHex(keys.encPrivate)).toBe(id.encPrivate);
      expect(toHex(keys.encPublic)).toBe(id.encPublic);
    }
  });

  it('rotates only the encryption key', () => {
    const seed = new Uint8Array(32).fill(5);
    const a = derive(seed, 0);
    const b = derive(seed, 1);
    expect(b.signPublic).toEqual(a.signPublic);
    expect(b.encPublic).not.toEqual(a.encPublic);
    expect(() => derive(seed, -1)).toThrow(RangeError);
    expect(() => derive(new Uint8Array(31), 0)).toThrow(expect.objectContaining({ code: 'envelope_invalid_key' }));
  });
});

describe('key helpers agree across implementations', () => {
  it('Ed25519: generate, public from private, sign (deterministic) and verify both ways', () => {
    for (const pair of [nobleKeys.ed25519Generate(), nativeEd.ed25519Generate()]) {
      expect(pair.privateKey).toBeInstanceOf(Uint8Array);
      expect(nobleKeys.ed25519PublicFromPrivate(pair.privateKey)).toEqual(pair.publicKey);
      expect(nativeEd.ed25519PublicFromPrivate(pair.privateKey)).toEqual(pair.publicKey);
      const data = text('enrollment proof');
      const sig = nativeEd.ed25519Sign(pair.privateKey, data);
      expect(nobleKeys.ed25519Sign(pair.privateKey, data)).toEqual(sig);
      expect(nativeEd.ed25519Verify(pair.publicKey, data, sig)).toBe(true);
      expect(nobleKeys.ed25519Verify(pair.publicKey, data, sig)).toBe(true);
      const bad = Uint8Array.from(sig);
      bad[0] = (bad[0] as number) ^ 1;
      expect(nativeEd.ed25519Verify(pair.publicKey, data, bad)).toBe(false);
      expect(nobleKeys.ed25519Verify(pair.publicKey, data, bad)).toBe(false);
      expect(nativeEd.ed25519Verify(pair.publicKey, data, sig.subarray(1))).toBe(false);
      expect(nativeEd.ed25519Verify(new Uint8Array(3), data, sig)).toBe(false);
    }
  });

  it('a reused key array that is changed in place is not served from the key cache', () => {
    const seed = Uint8Array.from(nobleKeys.ed25519Generate().privateKey);
    const first = nativeEd.ed25519PublicFromPrivate(seed);
    seed[0] = (seed[0] as number) ^ 0xff;
    expect(nativeEd.ed25519PublicFromPrivate(seed)).toEqual(nobleKeys.ed25519PublicFromPrivate(seed));
    expect(nativeEd.ed25519PublicFromPrivate(seed)).not.toEqual(first);
  });

  it('X25519: generate and public from private', () => {
    for (const pair of [nobleKeys.x25519Generate(), nativeX25519Generate()]) {
      expect(nobleKeys.x25519PublicFromPrivate(pair.privateKey)).toEqual(pair.publicKey);
      expect(nativeX25519Public(pair.privateKey)).toEqual(pair.publicKey);
    }
  });
});

const [vector] = vectors.envelopes;
if (!vector) throw new Error('no project vector');
const senderKeys = nobleKeys.deriveIdentityKeys(hex(vector.sender_seed), 0);
const recipientKeys = nobleKeys.deriveIdentityKeys(hex(vector.recipient_seed), vector.recipient_rotation);
const otherKeys = nobleKeys.deriveIdentityKeys(new Uint8Array(32).fill(0xee), 0);
const options: OpenEnvelopeOptions = {
  expectedRecipient: vector.header.recipient,
  expectedDeploymentId: vector.header.deployment_id,
  expectedTenantId: vector.header.tenant_id,
};

describe.each(implementations)('envelope (%s)', (_name, api) => {
  it('reproduces the project vector byte for byte', () => {
    const env = api.sealEnvelope({
      header: vector.header,
      plaintext: text(vector.plaintext_utf8),
      recipientX25519Public: recipientKeys.encPublic,
      senderEd25519Private: senderKeys.signPrivate,
      ephemeralPrivate: hex(vector.ephemeral_private),
    });
    expect(encodeEnvelope(env)).toBe(vector.envelope);
    expect(canonicalJson(env)).toBe(vector.envelope);
  });

  it('verifies and opens the project vector', () => {
    const env = decodeEnvelope(vector.envelope);
    expect(api.verifyEnvelope(env, senderKeys.signPublic)).toBe(true);
    const pt = api.openEnvelope(env, recipientKeys.encPrivate, {
      ...options,
      senderEd25519Public: senderKeys.signPublic,
    });
    expect(new TextDecoder().decode(pt)).toBe(vector.plaintext_utf8);
  });

  it('a fresh ephemeral key per envelope: same input, different enc and ciphertext', () => {
    const input = {
      header: vector.header,
      plaintext: text('x'),
      recipientX25519Public: recipientKeys.encPublic,
      senderEd25519Private: senderKeys.signPrivate,
    };
    const a = api.sealEnvelope(input);
    const b = api.sealEnvelope(input);
    expect(a.enc).not.toBe(b.enc);
    expect(a.ciphertext).not.toBe(b.ciphertext);
  });

  it('seals empty and 64 KiB bodies', () => {
    for (const size of [0, 65536]) {
      const body = new Uint8Array(size).map((_, i) => i & 0xff);
      const env = api.sealEnvelope({
        header: vector.header,
        plaintext: body,
        recipientX25519Public: recipientKeys.encPublic,
        senderEd25519Private: senderKeys.signPrivate,
      });
      expect(api.openEnvelope(env, recipientKeys.encPrivate, options)).toEqual(body);
    }
  });

  it('refuses to seal a bad header or bad keys', () => {
    const base = {
      header: vector.header,
      plaintext: text('x'),
      recipientX25519Public: recipientKeys.encPublic,
      senderEd25519Private: senderKeys.signPrivate,
    };
    const bad = { ...vector.header, conversation_type: 'chat' } as unknown as EnvelopeHeader;
    expect(() => api.sealEnvelope({ ...base, header: bad })).toThrow(
      expect.objectContaining({ code: 'envelope_malformed' }),
    );
    expect(() => api.sealEnvelope({ ...base, recipientX25519Public: new Uint8Array(31) })).toThrow(
      expect.objectContaining({ code: 'envelope_invalid_key' }),
    );
    expect(() => api.sealEnvelope({ ...base, senderEd25519Private: new Uint8Array(33) })).toThrow(
      expect.objectContaining({ code: 'envelope_invalid_key' }),
    );
  });
});

describe('cross-implementation', () => {
  it.each([
    ['noble', nobleEnvelope, 'native', nativeEnvelope],
    ['native', nativeEnvelope, 'noble', nobleEnvelope],
  ] as const)('seal with %s, verify and open with %s', (_a, sealer, _b, opener) => {
    const body = new Uint8Array(1024).map((_, i) => (i * 7) & 0xff);
    const env = sealer.sealEnvelope({
      header: vector.header,
      plaintext: body,
      recipientX25519Public: recipientKeys.encPublic,
      senderEd25519Private: senderKeys.signPrivate,
    });
    const received = decodeEnvelope(encodeEnvelope(env));
    expect(opener.verifyEnvelope(received, senderKeys.signPublic)).toBe(true);
    expect(opener.openEnvelope(received, recipientKeys.encPrivate, options)).toEqual(body);
  });
});

// ---- tampering: every change is refused, with the right code ----

type Mutable = { -readonly [K in keyof Envelope]: Envelope[K] } & { header: Record<string, unknown> };
const clone = (env: Envelope): Mutable => JSON.parse(JSON.stringify(env)) as Mutable;

function flipBase64url(value: string, index: number): string {
  const bytes = Buffer.from(value, 'base64url');
  bytes[index] = (bytes[index] as number) ^ 0x01;
  return bytes.toString('base64url');
}

/** A different valid value for each header field. */
const headerChanges: [keyof EnvelopeHeader, unknown][] = [
  ['message_id', '0192f3c4-5a6b-7c8d-9e0f-1a2b3c4d5e70'],
  ['sender', 'agent-z'],
  ['recipient', 'agent-c'],
  ['conversation_id', 'conv-0002'],
  ['conversation_type', 'group'],
  ['content_type', 'structured'],
  ['sent_at', '2026-01-02T03:04:05.679Z'],
  ['deployment_id', 'dep-other'],
  ['tenant_id', 'tenant-b'],
  ['v', 2],
];

describe.each(implementations)('tampering is refused (%s)', (_name, api) => {
  const original = decodeEnvelope(vector.envelope);
  const withSig = { ...options, senderEd25519Public: senderKeys.signPublic };

  const expectRefused = (
    env: unknown,
    code: EnvelopeErrorCode,
    opts: OpenEnvelopeOptions = options,
    key = recipientKeys.encPrivate,
  ) => expect(() => api.openEnvelope(env as Envelope, key, opts)).toThrow(expect.objectContaining({ code }));

  it.each(headerChanges)('header.%s changed: signature fails and open refuses', (field, value) => {
    const env = clone(original);
    (env.header as unknown as Record<string, unknown>)[field] = value;
    expect(api.verifyEnvelope(env, senderKeys.signPublic)).toBe(false);
    // Expected code when the opener's bindings stay those of the original envelope.
    const code: EnvelopeErrorCode =
      field === 'v'
        ? 'envelope_unsupported_version'
        : field === 'recipient'
          ? 'envelope_wrong_recipient'
          : field === 'deployment_id' || field === 'tenant_id'
            ? 'envelope_binding_mismatch'
            : 'envelope_decrypt_failed';
    expectRefused(env, code);
    if (field !== 'v') {
      // An opener who expects the changed binding still cannot open it: the header is the AAD.
      const opts = {
        ...options,
        ...(field === 'recipient' ? { expectedRecipient: value as string } : {}),
        ...(field === 'deployment_id' ? { expectedDeploymentId: value as string } : {}),
        ...(field === 'tenant_id' ? { expectedTenantId: value as string } : {}),
      };
      expectRefused(env, 'envelope_decrypt_failed', opts);
      expectRefused(env, 'envelope_bad_signature', { ...opts, senderEd25519Public: senderKeys.signPublic });
    }
  });

  it('a ciphertext bit flip (body and tag)', () => {
    for (const index of [0, 20, Buffer.from(original.ciphertext, 'base64url').length - 1]) {
      const env = clone(original);
      env.ciphertext = flipBase64url(env.ciphertext, index);
      expect(api.verifyEnvelope(env, senderKeys.signPublic)).toBe(false);
      expectRefused(env, 'envelope_decrypt_failed');
      expectRefused(env, 'envelope_bad_signature', withSig);
    }
  });

  it('a truncated or extended ciphertext', () => {
    const ct = Buffer.from(original.ciphertext, 'base64url');
    for (const changed of [ct.subarray(0, ct.length - 1), Buffer.concat([ct, Buffer.of(0)])]) {
      const env = clone(original);
      env.ciphertext = changed.toString('base64url');
      expectRefused(env, 'envelope_decrypt_failed');
    }
  });

  it('enc changed (another valid point, a flipped bit, a low-order point)', () => {
    for (const enc of [
      Buffer.from(otherKeys.encPublic).toString('base64url'),
      flipBase64url(original.enc, 5),
      Buffer.alloc(32).toString('base64url'),
    ]) {
      const env = clone(original);
      env.enc = enc;
      expect(api.verifyEnvelope(env, senderKeys.signPublic)).toBe(false);
      expectRefused(env, 'envelope_decrypt_failed');
    }
  });

  it('signature changed or from another key', () => {
    const env = clone(original);
    env.signature = flipBase64url(env.signature, 10);
    expect(api.verifyEnvelope(env, senderKeys.signPublic)).toBe(false);
    expectRefused(env, 'envelope_bad_signature', withSig);
    expect(api.verifyEnvelope(original, otherKeys.signPublic)).toBe(false);
    expectRefused(original, 'envelope_bad_signature', { ...options, senderEd25519Public: otherKeys.signPublic });
    // The signature also covers enc and ciphertext: re-signing is needed for any change.
    const resealed = api.sealEnvelope({
      header: vector.header,
      plaintext: text('other'),
      recipientX25519Public: recipientKeys.encPublic,
      senderEd25519Private: senderKeys.signPrivate,
    });
    const spliced = { ...clone(original), signature: resealed.signature };
    expect(api.verifyEnvelope(spliced, senderKeys.signPublic)).toBe(false);
  });

  it('swapped recipient: another recipient key cannot open it', () => {
    expectRefused(original, 'envelope_decrypt_failed', options, otherKeys.encPrivate);
    const rotated = nobleKeys.deriveIdentityKeys(hex(vector.recipient_seed), vector.recipient_rotation + 1);
    expectRefused(original, 'envelope_decrypt_failed', options, rotated.encPrivate);
    expectRefused(original, 'envelope_invalid_key', options, new Uint8Array(16));
  });

  it('wrong deployment or tenant expected by the opener', () => {
    expectRefused(original, 'envelope_binding_mismatch', { ...options, expectedDeploymentId: 'dep-other' });
    expectRefused(original, 'envelope_binding_mismatch', { ...options, expectedTenantId: 'tenant-b' });
    expectRefused(original, 'envelope_wrong_recipient', { ...options, expectedRecipient: 'agent-c' });
  });

  it('malformed envelopes', () => {
    const extra = { ...clone(original), note: 'x' };
    expectRefused(extra, 'envelope_malformed');
    const extraHeader = clone(original);
    extraHeader.header.extra = 1;
    expectRefused(extraHeader, 'envelope_malformed');
    expect(api.verifyEnvelope(extraHeader, senderKeys.signPublic)).toBe(false);
    const padded = clone(original);
    padded.signature = `${padded.signature}==`;
    expectRefused(padded, 'envelope_malformed');
    expectRefused(null, 'envelope_malformed');
    expectRefused([], 'envelope_malformed');
  });

  it('a replayed message id is refused by the ReplayGuard', () => {
    const guard = new ReplayGuard();
    const env = decodeEnvelope(vector.envelope);
    expect(api.verifyEnvelope(env, senderKeys.signPublic)).toBe(true);
    guard.assertFresh(env.header.sender, env.header.message_id);
    api.openEnvelope(env, recipientKeys.encPrivate, options);
    const replay = decodeEnvelope(vector.envelope);
    expect(api.verifyEnvelope(replay, senderKeys.signPublic)).toBe(true);
    expect(() => guard.assertFresh(replay.header.sender, replay.header.message_id)).toThrow(
      expect.objectContaining({ code: 'envelope_replayed' }),
    );
  });
});

describe('browser safety', () => {
  it('no module under shared/src/envelope imports node:*', () => {
    const dir = new URL('../envelope/', import.meta.url);
    const sources = readdirSync(dir).filter((f) => f.endsWith('.ts'));
    expect(sources.length).toBeGreaterThan(5);
    for (const f of sources) expect(readFileSync(new URL(f, dir), 'utf8')).not.toMatch(/from ['"]node:/);
  });
});
