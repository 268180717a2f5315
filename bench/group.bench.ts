/**
 * bench:group — one `send --conversation-id` to a group of GROUP_N members through a warm
 * daemon and a real relay, against GROUP_N direct sends (one after another, as a script
 * calling `svc send` in a loop would) in the same run.
 *
 *   relay:   a real `svc-relay serve` process with its nats-server (send and enrollment
 *            limits raised far above what the bench does);
 *   daemon:  one in-process daemon (file vault) with the sender agent; it creates the
 *            group (which pins every member's key), then one message warms the path;
 *   members: GROUP_N agents enrolled with the test client, each following its SSE stream;
 *            a message counts as delivered to a member when its envelope arrives there.
 *
 * Last line: `group fan-out of N: T ms` (T = send until the last member's delivery).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enrollAgent, type TestAgent } from '@svc/test-harness/agent-client';
import { spawnRelay } from '@svc/test-harness/relay-process';
import { DaemonClient } from '../daemon/src/client/index.js';
import { createDaemon, buildConfig as daemonConfig } from '../daemon/src/index.js';
import { buildConfig } from '../relay/src/config/config.js';
import { openOperatorState } from '../relay/src/index.js';
import { mintGrant } from '../relay/src/services/grants.js';

const N = Number(process.env.GROUP_N ?? 100);
const fmt = (ms: number) => Math.round(ms).toLocaleString('en-US');

/** Arrival time of each message id at each member, from the member's SSE stream. */
class Arrivals {
  readonly #at = new Map<string, Map<string, number>>();
  #wake: (() => void) | undefined;

  follow(base: string, m: TestAgent): () => void {
    const req = request(`${base}/api/v1/messages/stream`, {
      headers: { ...m.auth, accept: 'text/event-stream' },
    });
    req.on('response', (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
          const event = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const data = /^data: (.*)$/m.exec(event)?.[1];
          if (!data || !event.includes('event: envelope')) continue;
          const id = (JSON.parse(data) as { message_id: string }).message_id;
          const at = this.#at.get(id) ?? new Map<string, number>();
          this.#at.set(id, at);
          if (!at.has(m.number)) at.set(m.number, performance.now());
          this.#wake?.();
        }
      });
    });
    req.on('error', () => undefined);
    req.end();
    return () => req.destroy();
  }

  /** The time the last of `members` received every one of `ids`. */
  async last(ids: string[], members: number): Promise<number> {
    for (;;) {
      const done = ids.every((id) => (this.#at.get(id)?.size ?? 0) >= members);
      if (done) return Math.max(...ids.flatMap((id) => [...(this.#at.get(id)?.values() ?? [])]));
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        this.#wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }
}

async function main(): Promise<void> {
  const relay = await spawnRelay({
    env: {
      SVC_RELAY_TENANTS: 'acme',
      SVC_RELAY_LOG_LEVEL: 'warn',
      SVC_RELAY_AUTH_RATE_PER_ADDRESS: '100000',
      SVC_RELAY_SEND_RATE_PER_AGENT: '100000',
      SVC_RELAY_SEND_BURST_PER_AGENT: '100000',
    },
  });
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-group-'));
  const daemon = createDaemon(
    daemonConfig({}, { home, vaultBackend: 'file', vaultPassphrase: 'bench', logLevel: 'warn' }),
  );
  const stops: Array<() => void> = [];
  try {
    await daemon.start();
    const client = new DaemonClient({ home });
    // grants minted from the data dir, as `svc-relay grant` does, without a process each
    const config = buildConfig({
      SVC_RELAY_DATA_DIR: relay.dataDir,
      SVC_RELAY_PUBLIC_URL: relay.url,
      SVC_RELAY_TENANTS: 'acme',
    });
    const { deployment, ledger } = await openOperatorState(config);
    const grant = async (agentId: string) =>
      (
        await mintGrant(
          { config, deployment, ledger, now: Date.now },
          { tenantId: 'acme', agentId, capabilities: ['http-relay'], createdBy: 'bench:group' },
        )
      ).enrollment_code;
    const codes = {
      sender: await grant('sender'),
      members: await Promise.all(Array.from({ length: N }, (_, i) => grant(`member-${i}`))),
    };
    ledger.close();

    const bundle = readFileSync(join(relay.dataDir, 'deployment', 'trust-bundle.json'), 'utf8');
    await client.fetchDeployment({ url: relay.url, trust_bundle: bundle, name: 'bench' });
    await client.register({ enrollment_code: codes.sender, name: 'sender' });
    const members: TestAgent[] = [];
    for (const code of codes.members) members.push(await enrollAgent(relay.url, code));
    const arrivals = new Arrivals();
    for (const m of members) stops.push(arrivals.follow(relay.url, m));

    // warm: the group's create pins every member's key; one message warms the send path
    const group = await client.createConversation('sender', {
      kind: 'group',
      name: 'bench',
      members: members.map((m) => m.number),
    });
    const warm = await client.send('sender', { to: '', conversation_id: group.conversation_id, content: 'warm' });
    await arrivals.last([warm.message_id], N);

    const g0 = performance.now();
    const sent = await client.send('sender', {
      to: '',
      conversation_id: group.conversation_id,
      content: 'one message for the whole group',
    });
    const groupAccepted = performance.now() - g0;
    const groupMs = (await arrivals.last([sent.message_id], N)) - g0;

    const d0 = performance.now();
    const ids: string[] = [];
    for (const m of members) {
      ids.push((await client.send('sender', { to: m.number, content: 'one message for one member' })).message_id);
    }
    const directAccepted = performance.now() - d0;
    const directMs = (await arrivals.last(ids, 1)) - d0;

    console.log(`members:                     ${N}`);
    console.log(`group send accepted after:   ${fmt(groupAccepted)} ms (one daemon call, ${N} sealed envelopes)`);
    console.log(`direct sends accepted after: ${fmt(directAccepted)} ms (${N} daemon calls)`);
    console.log(`${N} direct sends:            ${fmt(directMs)} ms to the last delivery`);
    console.log(`group fan-out of ${N}: ${fmt(groupMs)} ms`);
  } finally {
    for (const stop of stops) stop();
    await daemon.close();
    await relay.stop();
    rmSync(home, { recursive: true, force: true });
    rmSync(relay.dataDir, { recursive: true, force: true });
  }
}

await main();
