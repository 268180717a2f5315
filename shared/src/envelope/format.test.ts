import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../canonical-json.js';
import {
  base64urlByteLength,
  createEnvelopeHeader,
  decodeEnvelope,
  type Envelope,
  type EnvelopeHeader,
  encodeEnvelope,
  envelopeInfoJson,
  headerCanonicalJson,
  isEnvelope,
  parseEnvelope,
  parseEnvelopeHeader,
  signatureInputJson,
} from './format.js';

const header: EnvelopeHeader = {
  v: 1,
  message_id: '0192f3c4-5a6b-7c8d-9e0f-1a2b3c4d5e6f',
  sender: 'agent-a',
  recipient: 'agent_B-2',
  conversation_id: 'conv:0001@x.y',
  conversation_type: 'broadcast',
  content_type: 'control',
  sent_at: '2024-02-29T23:59:59Z',
  deployment_id: 'dep-test',
  tenant_id: 'tenant-a',
};
const b64 = (n: number) => Buffer.alloc(n, 7).toString('base64url');
const envelope: Envelope = { header, enc: b64(32), ciphertext: b64(40), signature: b64(64) };
const withHeader = (change: Record<string, unknown>) => ({ ...envelope, header: { ...header, ...change } });
const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return 'no error';
};

describe('canonical bytes', () => {
  it('the fast writers equal RFC 8785 canonical JSON', () => {
    expect(headerCanonicalJson(header)).toBe(canonicalJson(header));
    expect(envelopeInfoJson('dep-test', 'tenant-a')).toBe(
      canonicalJson({ svc: 'envelope/v1', deployment_id: 'dep-test', tenant_id: 'tenant-a' }),
    );
    expect(signatureInputJson(headerCanonicalJson(header), envelope.enc, envelope.ciphertext)).toBe(
      canonicalJson({ svc: 'envelope/v1/signature', header, enc: envelope.enc, ciphertext: envelope.ciphertext }),
    );
    expect(encodeEnvelope(envelope)).toBe(canonicalJson(envelope));
    expect(decodeEnvelope(encodeEnvelope(envelope))).toEqual(envelope);
  });
});

describe('parseEnvelope', () => {
  it('accepts a valid envelope and returns a frozen copy', () => {
    const parsed = parseEnvelope(JSON.parse(JSON.stringify(envelope)));
    expect(parsed).toEqual(envelope);
    expect(Object.isFrozen(parsed)).toBe(true);
    expect(isEnvelope(envelope)).toBe(true);
  });

  it.each([
    ['message_id not v7', { message_id: '0192f3c4-5a6b-4c8d-9e0f-1a2b3c4d5e6f' }],
    ['message_id uppercase', { message_id: '0192F3C4-5A6B-7C8D-9E0F-1A2B3C4D5E6F' }],
    ['sender with a dot', { sender: 'agent.a' }],
    ['sender too long', { sender: 'a'.repeat(129) }],
    ['recipient empty', { recipient: '' }],
    ['recipient a number', { recipient: 7 }],
    ['conversation_id with a space', { conversation_id: 'a b' }],
    ['conversation_type', { conversation_type: 'chat' }],
    ['content_type', { content_type: 'html' }],
    ['sent_at not UTC', { sent_at: '2024-01-01T00:00:00+01:00' }],
    ['sent_at impossible day', { sent_at: '2023-02-29T00:00:00Z' }],
    ['sent_at hour 24', { sent_at: '2024-01-01T24:00:00Z' }],
    ['deployment_id missing', { deployment_id: undefined }],
    ['tenant_id with a quote', { tenant_id: 'a"b' }],
    ['v as a string', { v: '1' }],
    ['an extra field', { extra: true }],
  ])('refuses header: %s', (_what, change) => {
    expect(code(() => parseEnvelope(withHeader(change)))).toBe('envelope_malformed');
  });

  it('refuses another version with its own code', () => {
    expect(code(() => parseEnvelope(withHeader({ v: 2 })))).toBe('envelope_unsupported_version');
  });

  it.each([
    ['enc short', { enc: b64(31) }],
    ['enc padded', { enc: `${b64(32)}=` }],
    ['enc standard base64', { enc: Buffer.alloc(32, 0xfb).toString('base64').replace(/=+$/, '') }],
    ['ciphertext shorter than the tag', { ciphertext: b64(15) }],
    ['ciphertext non-canonical trailing bits', { ciphertext: `${b64(40).slice(0, -1)}B` }],
    ['signature 63 bytes', { signature: b64(63) }],
    ['signature not a string', { signature: 5 }],
    ['an extra field', { extra: 1 }],
    ['header missing', { header: undefined }],
  ])('refuses envelope: %s', (_what, change) => {
    expect(code(() => parseEnvelope({ ...envelope, ...change }))).toBe('envelope_malformed');
  });

  it('refuses non-objects and bad JSON', () => {
    for (const v of [null, 1, 'x', [], new Map()]) expect(code(() => parseEnvelope(v))).toBe('envelope_malformed');
    expect(code(() => decodeEnvelope('{'))).toBe('envelope_malformed');
  });

  it('re-validates an object changed after a successful parse', () => {
    const value = JSON.parse(JSON.stringify(envelope));
    parseEnvelope(value);
    value.header.sender = 'bad sender';
    expect(code(() => parseEnvelope(value))).toBe('envelope_malformed');
    value.header.sender = 'agent-a';
    parseEnvelope(value);
    value.extra = 1;
    expect(code(() => parseEnvelope(value))).toBe('envelope_malformed');
  });

  it('base64urlByteLength checks canonical form without decoding', () => {
    expect(base64urlByteLength('')).toBe(0);
    expect(base64urlByteLength('AA')).toBe(1);
    expect(base64urlByteLength('AB')).toBe(-1);
    expect(base64urlByteLength('AAA')).toBe(2);
    expect(base64urlByteLength('AAB')).toBe(-1);
    expect(base64urlByteLength('A')).toBe(-1);
    expect(base64urlByteLength('AA+/')).toBe(-1);
  });
});

describe('createEnvelopeHeader', () => {
  it('fills v, a UUIDv7 message id and sent_at', () => {
    const now = new Date('2026-03-04T05:06:07.089Z');
    const h = createEnvelopeHeader(
      {
        sender: 'a',
        recipient: 'b',
        conversation_id: 'c',
        conversation_type: 'direct',
        content_type: 'text',
        deployment_id: 'd',
        tenant_id: 't',
      },
      now,
    );
    expect(h.v).toBe(1);
    expect(h.sent_at).toBe('2026-03-04T05:06:07.089Z');
    expect(parseEnvelopeHeader(h)).toEqual(h);
  });
});
