/**
 * The message event stream's limits through a real relay process: the cap on one agent's
 * concurrent streams (SVC_RELAY_STREAMS_PER_AGENT, default 8) and the end of a revoked
 * agent's stream: at once when it revoked itself, at the relay's next cleanup round (5 s)
 * when the operator revoked it offline, and at the stream's own check (every 15 s) at worst.
 */
import { until } from '@svc/test-harness';
import { call, enrollAgent, openMessageStream, type TestAgent } from '@svc/test-harness/agent-client';
import { grantCode, type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const DEFAULT_STREAMS_PER_AGENT = 8;
/**
 * Counted from the stream's opening. A revocation makes the stream ask the ledger at once (a
 * self-revocation), or at the relay's next cleanup round (an operator's, every 5 s); its
 * periodic check, 15 s after it opened, would come after this.
 */
const REVOCATION_NOTICED_MS = 13_000;

let relay: RelayProcess;

beforeAll(async () => {
  relay = await spawnRelay();
}, 60_000);

afterAll(async () => {
  await relay?.stop();
});

const agent = async (id: string): Promise<TestAgent> => enrollAgent(relay.url, await grantCode(relay, id));

/** Opens a stream and answers its status and, when refused, its error body. */
async function tryStream(who: TestAgent): Promise<{ status: number; body?: unknown; abort: AbortController }> {
  const abort = new AbortController();
  const res = await fetch(`${relay.url}/api/v1/messages/stream`, { headers: who.auth, signal: abort.signal });
  if (res.status === 200) return { status: 200, abort };
  return { status: res.status, body: await res.json(), abort };
}

describe('concurrent streams per agent', () => {
  it('the one past the cap is refused with 429 too_many_streams; a closed stream frees its slot', async () => {
    const [bob, alice] = await Promise.all([agent('bob'), agent('alice')]);
    const streams = Array.from({ length: DEFAULT_STREAMS_PER_AGENT }, () => openMessageStream(relay.url, bob.auth));
    try {
      await Promise.all(streams.map((s) => s.opened));
      const refused = await tryStream(bob);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ error: 'too_many_streams', message: expect.any(String) });
      // the cap is per agent: another agent still opens one
      const other = await tryStream(alice);
      expect(other.status).toBe(200);
      other.abort.abort();

      // one closes: its slot is free once the relay has seen the connection go
      streams.shift()?.close();
      const reused = await until(() => tryStream(bob).then((r) => r.status === 200 && r), 10_000, 'a freed slot');
      try {
        const again = await tryStream(bob);
        expect(again.status).toBe(429);
      } finally {
        reused.abort.abort();
      }
    } finally {
      for (const s of streams) s.close();
    }
  });
});

/** How an agent is revoked: by itself over the API, or by the operator offline (beside the running relay). */
const revokers: Array<[string, (who: TestAgent) => Promise<void>]> = [
  [
    'by itself',
    async (who) => {
      expect((await call(relay.url, 'POST', '/api/v1/agents/me/revoke', undefined, who.auth)).status).toBe(200);
    },
  ],
  [
    'by the operator (svc-relay agent revoke)',
    async (who) => {
      const r = await runRelayCli(['agent', 'revoke', '--agent-id', who.agentId], relay.env);
      expect(r.code, r.stderr).toBe(0);
    },
  ],
];

describe('revocation', () => {
  it.each(revokers)(
    'an agent revoked %s: its open stream ends, with an invalid_token error event',
    async (by, revoke) => {
      const who = await agent(by.startsWith('by itself') ? 'carol' : 'dave');
      const res = await fetch(`${relay.url}/api/v1/messages/stream`, { headers: who.auth });
      expect(res.status).toBe(200);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = '';
      const ended = (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return true;
          text += decoder.decode(value, { stream: true });
        }
      })();
      await until(() => text.includes(': svc message stream'), 10_000, 'the opening comment');
      // from the stream's opening, not the revocation's: the CLI may take seconds to start, and
      // the stream's own check must stay outside the window
      const openedAt = Date.now();

      await revoke(who);

      const outcome = await Promise.race([
        ended,
        new Promise<false>((r) => setTimeout(() => r(false), REVOCATION_NOTICED_MS - (Date.now() - openedAt))),
      ]);
      if (!outcome) await reader.cancel();
      expect(outcome, `the stream went on after the revocation:\n${text}`).toBe(true);
      const error = /event: error\ndata: (.*)\n/.exec(text)?.[1];
      expect(JSON.parse(error ?? '{}')).toMatchObject({ error: 'invalid_token' });
      // and it cannot be opened again with that token
      expect((await tryStream(who)).status).toBe(401);
    },
    60_000,
  );
});
