import { randomBytes } from 'node:crypto';
import { createEnvelopeHeader, type Envelope, encodeEnvelope } from '@svc/shared';
import { sealEnvelope } from '@svc/shared/node';
import { identityFromSeed } from '@svc/test-harness/agent-client';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { canonicalBytesOf, installSendBodyParser } from './send-body.js';

const sender = identityFromSeed(randomBytes(32)).keys;
const recipient = identityFromSeed(randomBytes(32)).keys;

/** A really sealed 1 KiB envelope, as clients send them. */
function envelope(i: number): Envelope {
  return sealEnvelope({
    header: createEnvelopeHeader({
      sender: 'agent-a',
      recipient: `agent-b${i}`,
      conversation_id: `dm-${i}`,
      conversation_type: 'direct',
      content_type: 'text',
      deployment_id: 'dep-test',
      tenant_id: 'tenant-a',
    }),
    plaintext: new Uint8Array(1024).fill(i),
    recipientX25519Public: recipient.encPublic,
    senderEd25519Private: sender.signPrivate,
  });
}

/** What the route saw of the parsed body. */
interface Seen {
  keys: string[][];
  headers: unknown[];
  bytes: string[] | null;
}

async function post(payload: string): Promise<Seen> {
  const scope = Fastify();
  await scope.register(async (s) => {
    installSendBodyParser(s);
    s.post('/send', async (request) => {
      const body = request.body as { envelopes: Record<string, unknown>[] };
      return {
        keys: body.envelopes.map((e) => Object.keys(e).sort()),
        headers: body.envelopes.map((e) => e.header),
        bytes: canonicalBytesOf(body)?.map((b) => b.toString('latin1')) ?? null,
      } satisfies Seen;
    });
  });
  const res = await scope.inject({
    method: 'POST',
    url: '/send',
    headers: { 'content-type': 'application/json' },
    payload,
  });
  await scope.close();
  expect(res.statusCode).toBe(200);
  return res.json<Seen>();
}

describe('the send body parser', () => {
  it('a canonical body: each envelope keeps its header only, and its canonical bytes are cut from the body', async () => {
    const envs = [envelope(1), envelope(2)];
    const seen = await post(JSON.stringify({ envelopes: envs }));
    // the sealed parts' text is not kept for the request's life (the relay reads the header only)
    expect(seen.keys).toEqual([['header'], ['header']]);
    expect(seen.headers).toEqual(envs.map((e) => e.header));
    expect(seen.bytes).toEqual(envs.map(encodeEnvelope));
  });

  it('any other spelling goes the general way, whole, with no canonical bytes', async () => {
    const envs = [envelope(3)];
    const seen = await post(JSON.stringify({ envelopes: envs }, null, 1));
    expect(seen.keys).toEqual([['ciphertext', 'enc', 'header', 'signature']]);
    expect(seen.headers).toEqual(envs.map((e) => e.header));
    expect(seen.bytes).toBeNull();
  });
});
