/**
 * bench:relay — envelopes through the relay (HTTP + access JWT + ledger + JetStream)
 * against the floor of any HTTP relay on this machine and raw JetStream publishes.
 *
 *   relay:    a real `svc-relay dev` process; N sealed 1 KiB envelopes sent in batches of
 *             BATCH per request with CONCURRENCY requests in flight (the send path alone,
 *             as the baseline measures publishes alone). Then a second recipient follows
 *             its SSE stream while LATENCY_N envelopes go out in batches of 10, which gives
 *             send→delivery latency.
 *   bare:     the floor: bare Fastify, in a process of its own, that reads the same request
 *             bodies as bytes, checks nothing and publishes each envelope with an
 *             acknowledgement through the relay's publisher (BENCH_SKIP_BARE to skip).
 *   baseline: (information) a nats-server in the same operator/JetStream setup (our Bus), N raw
 *             publishes to the same kind of stream, the fastest way the client allows:
 *             no per-message promise, a reply inbox per message and one wildcard
 *             subscription counting acknowledgements, WINDOW publishes in flight
 *             (BENCH_SKIP_RAW to skip it, and the ratios against it).
 *
 * Fair by construction: the relay and the bare server get the same request bodies from the
 * same load generator (node:http, kept-alive), both run from source under tsx (its loader
 * hooks cost only at start; nothing is transpiled per request) with the Node flags that
 * svc-relay's launcher gives the relay (its young generation's size), and both first get a
 * warm-up pass of BENCH_WARMUP other envelopes (4,000 by default, batched the same way, not
 * measured) so that neither is measured while the JIT compiles it. Each run prints the
 * load generator's CPU, the machine's busy share, and the CPU per envelope of each process
 * (server, its nats-server, load generator; from /proc schedstat, all threads) and of the
 * server's main thread alone (the rest is V8's collector and compiler threads), which says
 * where the cost is. The machine has few cores and all three processes share them: check
 * `uptime` first, other work on the machine moves every figure.
 *
 * Then the relay again with its ledger on PostgreSQL (a throwaway server from the test
 * harness; BENCH_SKIP_POSTGRES to skip, skipped with the reason where it is not installed).
 *
 * Profiling: BENCH_RELAY_NODE_ARGS / BENCH_BARE_NODE_ARGS (say "--cpu-prof
 * --cpu-prof-dir=/tmp/prof") go to the server processes; BENCH_MARK=1 prints the measured
 * windows on the monotonic clock (µs, the clock of the profiles' timestamps) to stderr.
 *
 * The relay and the floor run side by side and are measured in turns, BENCH_ROUNDS rounds
 * (10 by default) on the same bodies, fresh envelopes each round: this machine's speed
 * drifts between runs taken seconds apart, and alternating gives both the same drift. Each
 * measured run starts after BENCH_REST_MS (3,000 by default) of rest: without it, whichever
 * went second in a round ran 10–25% slower than in rounds where it went first. Some of that
 * remains, so ratios are taken over pairs of rounds, one in each order (pairedRatio).
 *
 * BENCH_AGAINST=<another checkout, its packages installed> compares this relay with that
 * one instead (say, the commit before a change): both run side by side from their own
 * sources, BENCH_ROUNDS alternating rounds, and the last line is `this/other ratio: R`, the
 * median over pairs of rounds (one in each order) of the pair's geometric mean. Nothing
 * else is measured.
 *
 * `relay/jetstream ratio` (relay ÷ raw) for information; last line: `relay/floor ratio: R`
 * (R: relay rate on SQLite ÷ bare rate, round by round; the median over pairs of rounds of
 * the pair's geometric mean).
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { createInbox, headers } from '@nats-io/transport-node';
import { freePort, runChild, tempDir } from '@svc/test-harness';
import { enrollAgent, openMessageStream, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { postgresUnavailable, startPostgres } from '@svc/test-harness/postgres';
import Fastify from 'fastify';
import { pino } from 'pino';
import { Bus, MSGS_STREAM } from '../relay/src/bus/index.js';
import { connectWithCreds } from '../relay/src/bus/system-client.js';
import { AckedPublisher } from '../relay/src/messages/acked-publisher.js';
import { median } from './common.js';

const N = Number(process.env.BENCH_N ?? 20_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 100);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 2);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 2_000);
const LATENCY_N = Number(process.env.BENCH_LATENCY_N ?? 2_000);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 4_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 10));
const REST_MS = Number(process.env.BENCH_REST_MS ?? 3_000);
const AGAINST = process.env.BENCH_AGAINST;
const BODY = 'x'.repeat(1024);

/** How the relays run: from their TypeScript sources (the floor does too). */
const SOURCE_ARGS = ['--conditions=source', '--import', 'tsx'];

/**
 * The Node flags svc-relay's launcher starts the relay with (the first line of a checkout's
 * relay/bin/svc-relay.js, `#!/usr/bin/env -S node …`): the relay runs with them here, and
 * so does the floor, which is then the same Node as the relay's.
 */
function launcherFlags(checkout = fileURLToPath(new URL('..', import.meta.url))): string[] {
  const first = readFileSync(resolve(checkout, 'relay/bin/svc-relay.js'), 'utf8').split('\n')[0] ?? '';
  return first.split(/\s+/).filter((a) => a.startsWith('--'));
}

const quiet = pino({ level: 'silent' });
const rate = (n: number, ms: number) => (n / ms) * 1000;
const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};

async function rawJetStream(size: number): Promise<number> {
  const dir = tempDir('svc-bench-raw-');
  const bus = await Bus.start({ dataDir: dir, tenants: ['bench'], logger: quiet });
  try {
    const { creds } = await bus.mintUserCreds('bench', { name: 'bench' });
    const nc = await connectWithCreds(bus.clientUrl, creds, 'bench-raw');
    const payload = new Uint8Array(size).fill(120);
    const inbox = createInbox();
    let acked = 0;
    let failed = 0;
    let wake: (() => void) | undefined;
    const sub = nc.subscribe(`${inbox}.>`, {
      callback: (_err, msg) => {
        // a stream ack is {"stream":…,"seq":…}; an error carries "error"
        if (msg.data.length > 0 && msg.data[2] === 101 /* 'e' of "error" */) failed++;
        acked++;
        wake?.();
      },
    });
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      while (i - acked >= WINDOW) await new Promise<void>((r) => (wake = r));
      const h = headers();
      h.set('Nats-Msg-Id', `raw-${i}`);
      nc.publish(`msg.r${i % 64}`, payload, { reply: `${inbox}.${i}`, headers: h });
    }
    while (acked < N) await new Promise<void>((r) => (wake = r));
    const ms = performance.now() - t0;
    if (failed > 0) throw new Error(`${failed} raw publishes were refused`);
    sub.unsubscribe();
    await nc.close();
    return rate(N, ms);
  } finally {
    await bus.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Nanoseconds a thread of a process has spent on a CPU so far (schedstat); throws when it is gone. */
const threadCpuNs = (pid: number, tid: number | string): number =>
  Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);

/** CPU seconds a process's main thread has used so far (its event loop; the thread id is the pid). */
function mainThreadCpu(pid: number): number {
  try {
    return threadCpuNs(pid, pid) / 1e9;
  } catch {
    return Number.NaN; // not on Linux, or the process is gone
  }
}

/** CPU seconds a process has used so far, all its threads. */
function processCpu(pid: number): number {
  let ns = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += threadCpuNs(pid, task);
      } catch {
        // the thread ended between the listing and the read
      }
    }
  } catch {
    return Number.NaN; // not on Linux, or the process is gone
  }
  return ns / 1e9;
}

/** The pid of `parent`'s child running `name` (the nats-server a relay or bare server started). */
function childNamed(parent: number, name: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && comm === name) return Number(entry);
    } catch {
      // gone already
    }
  }
  return undefined;
}

function machineCpu(): { busy: number; total: number } {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] as string).trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - (f[3] ?? 0) - (f[4] ?? 0), total };
}

interface SendRun {
  rate: number;
  /** the load generator's own CPU, in cores */
  clientCores: number;
  /** busy share of the whole machine (both cores) */
  machineBusy: number;
  /**
   * CPU microseconds per envelope of the server process (serverMain: its main thread; the
   * rest is V8's collector and compiler threads and, in the relay, the ledger's checkpoints),
   * its nats-server and the load generator
   */
  perEnvelope: { server: number; serverMain: number; nats: number; client: number };
}

/**
 * POSTs every body, CONCURRENCY at a time, and expects 202s. The load generator should cost
 * as little as the raw baseline's client: plain node:http on kept-alive connections
 * (fetch costs several times more per request).
 */
async function sendAll(
  url: string,
  headers: Record<string, string>,
  bodies: Buffer[],
  serverPid: number,
  envelopes = N,
  rest = REST_MS,
): Promise<SendRun> {
  const natsPid = childNamed(serverPid, 'nats-server');
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const post = (body: Buffer) =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: { ...headers, 'content-type': 'application/json', 'content-length': body.length },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            res.statusCode === 202
              ? resolve()
              : reject(new Error(`send failed: ${res.statusCode} ${Buffer.concat(chunks).toString()}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  let next = 0;
  await new Promise((r) => setTimeout(r, rest));
  // BENCH_MARK: the measured window on the monotonic clock (µs), to cut a --cpu-prof profile to it
  if (process.env.BENCH_MARK) console.error(`window start ${process.hrtime.bigint() / 1000n}`);
  const machine0 = machineCpu();
  const server0 = processCpu(serverPid);
  const main0 = mainThreadCpu(serverPid);
  const nats0 = natsPid === undefined ? Number.NaN : processCpu(natsPid);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < bodies.length) await post(bodies[next++] as Buffer);
    }),
  );
  const ms = performance.now() - t0;
  if (process.env.BENCH_MARK) console.error(`window end ${process.hrtime.bigint() / 1000n}`);
  const cpu = process.cpuUsage(cpu0);
  const server1 = processCpu(serverPid);
  const main1 = mainThreadCpu(serverPid);
  const nats1 = natsPid === undefined ? Number.NaN : processCpu(natsPid);
  const machine1 = machineCpu();
  agent.destroy();
  return {
    // Promise.all above rejects on any refused request, so all N envelopes went through.
    rate: rate(envelopes, ms),
    clientCores: (cpu.user + cpu.system) / 1000 / ms,
    machineBusy: (machine1.busy - machine0.busy) / (machine1.total - machine0.total),
    perEnvelope: {
      server: ((server1 - server0) * 1e6) / envelopes,
      serverMain: ((main1 - main0) * 1e6) / envelopes,
      nats: ((nats1 - nats0) * 1e6) / envelopes,
      client: (cpu.user + cpu.system) / envelopes,
    },
  };
}

/** A relay process, started, with its sender and recipient enrolled. */
interface StartedRelay {
  url: string;
  auth: Record<string, string>;
  pid: number;
  /** n sealed envelopes to the recipient, serialized in advance in request bodies of BATCH */
  bodies(n: number): Buffer[];
  /** send→delivery latency on a second recipient's event stream */
  latency(): Promise<{ p50: number; p99: number }>;
  stop(): Promise<void>;
}

async function startRelay(
  extraEnv: Record<string, string> = {},
  bin = fileURLToPath(new URL('../relay/src/bin/svc-relay.ts', import.meta.url)),
  flags = launcherFlags(),
): Promise<StartedRelay> {
  const dir = tempDir('svc-bench-relay-');
  const port = await freePort();
  const env = {
    SVC_RELAY_DATA_DIR: dir,
    SVC_RELAY_LISTEN: `127.0.0.1:${port}`,
    SVC_RELAY_LOG_LEVEL: 'warn',
    // One sender floods one recipient that reads nothing: the quotas stay on (their checks
    // are part of the measured path) but far above what the bench sends.
    SVC_RELAY_SEND_RATE_PER_AGENT: '10000000',
    SVC_RELAY_SEND_BURST_PER_AGENT: '10000000',
    SVC_RELAY_RECIPIENT_MAX_PENDING: '10000000',
    SVC_RELAY_RECIPIENT_MAX_PENDING_BYTES: String(1024 ** 4),
    ...extraEnv,
  };
  const nodeArgs = process.env.BENCH_RELAY_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...flags, ...nodeArgs, ...SOURCE_ARGS, bin, 'dev', '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', process.env.BENCH_RELAY_LOG ? 'inherit' : 'ignore'],
  });
  const stopChild = stopper(child);
  const stop = async () => {
    await stopChild();
    rmSync(dir, { recursive: true, force: true });
  };
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  try {
    const start = Date.now();
    while (!out.trim().endsWith('}')) {
      if (Date.now() - start > 60_000 || child.exitCode !== null) throw new Error(`relay did not start: ${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const base = `http://127.0.0.1:${port}`;
    const banner = JSON.parse(out) as { enrollment_code?: string };
    if (!banner.enrollment_code) throw new Error(`svc-relay dev did not start: ${out}`);
    const sender = await enrollAgent(base, banner.enrollment_code);
    const enroll = async (agentId: string) => {
      // the grant comes from the same sources as the relay (another checkout's, with BENCH_AGAINST)
      const grant = await runChild(process.execPath, [...SOURCE_ARGS, bin, 'grant', '--agent-id', agentId, '--json'], {
        env: { ...process.env, ...env },
      });
      if (grant.code !== 0) throw new Error(`svc-relay grant failed: ${grant.stderr}${grant.stdout}`);
      return enrollAgent(base, (JSON.parse(grant.stdout) as { enrollment_code: string }).enrollment_code);
    };
    const recipient: TestAgent = await enroll('bench-recipient');
    return {
      url: `${base}/api/v1/messages`,
      auth: sender.auth,
      pid: child.pid as number,
      // Sealed and serialized in advance: the client's crypto and JSON are not what this measures.
      bodies: (n) => {
        const envelopes = Array.from({ length: n }, () => sealFor(sender, recipient, BODY));
        const out: Buffer[] = [];
        for (let i = 0; i < n; i += BATCH)
          out.push(Buffer.from(JSON.stringify({ envelopes: envelopes.slice(i, i + BATCH) })));
        return out;
      },
      latency: async () => {
        // A second recipient follows its event stream while LATENCY_N envelopes are sent in
        // small batches; each is timed from its request to its arrival on the stream.
        const follower = await enroll(`bench-follower-${Date.now()}`);
        const timed = Array.from({ length: LATENCY_N }, () => sealFor(sender, follower, BODY));
        const sentAt = new Map<string, number>();
        const latencies: number[] = [];
        let allIn: () => void = () => undefined;
        const delivered = new Promise<void>((resolve) => {
          allIn = resolve;
        });
        const stream = openMessageStream(base, follower.auth, undefined, {
          onEnvelope: (e) => {
            const t = sentAt.get(e.message_id);
            if (t !== undefined) latencies.push(performance.now() - t);
            if (latencies.length >= LATENCY_N) allIn();
          },
        });
        await stream.opened;
        const post = async (body: string) => {
          const res = await fetch(`${base}/api/v1/messages`, {
            method: 'POST',
            headers: { ...sender.auth, 'content-type': 'application/json' },
            body,
          });
          if (res.status !== 202) throw new Error(`send failed: ${res.status} ${await res.text()}`);
          await res.arrayBuffer();
        };
        let k = 0;
        await Promise.all(
          Array.from({ length: 2 }, async () => {
            while (k < timed.length) {
              const batch = timed.slice(k, k + 10);
              k += batch.length;
              const body = JSON.stringify({ envelopes: batch });
              const now = performance.now();
              for (const e of batch) sentAt.set(e.header.message_id, now);
              await post(body);
            }
          }),
        );
        await Promise.race([delivered, new Promise((r) => setTimeout(r, 60_000))]);
        stream.close();
        return { p50: pct(latencies, 50), p99: pct(latencies, 99) };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The floor of any HTTP relay here: bare Fastify, in a process of its own, fed the same
 * request bodies, that reads each body as bytes and publishes every envelope with an
 * acknowledgement through the relay's own publisher. It checks nothing, parses no JSON
 * (envelopes are cut at their opening field, subject and message id found by search),
 * authenticates nobody and records nothing: what is left is HTTP and the publishes.
 */
async function bareServer(): Promise<void> {
  const dir = tempDir('svc-bench-bare-');
  const bus = await Bus.start({ dataDir: dir, tenants: ['bench'], logger: quiet });
  const publisher = new AckedPublisher(await bus.tenantConnection('bench'), 5000);
  const app = Fastify({ bodyLimit: 8 * 1024 * 1024 });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  const OPENING = Buffer.from('{"ciphertext"');
  // Searches in the bytes, and only the fields become strings, as in the relay: a body of
  // 100 envelopes as one string is a large object (over 128 KiB) per request, and with it
  // the floor's process sometimes spent 6–13 µs per envelope in its collector's threads.
  const field = (raw: Buffer, name: string, from: number) => {
    const at = raw.indexOf(`"${name}":"`, from, 'latin1') + name.length + 4;
    return raw.toString('latin1', at, raw.indexOf(34 /* " */, at));
  };
  app.post('/send', async (req, reply) => {
    const raw = req.body as Buffer;
    const starts: number[] = [];
    for (let i = raw.indexOf(OPENING); i >= 0; i = raw.indexOf(OPENING, i + 1)) starts.push(i);
    const acks = await Promise.all(
      starts.map((start, k) => {
        const end = k + 1 < starts.length ? (starts[k + 1] as number) - 1 : raw.length - 2;
        const recipient = field(raw, 'recipient', start);
        return publisher.publish(
          `msg.${recipient}`,
          raw.subarray(start, end),
          `${field(raw, 'message_id', start)}:${recipient}`,
          MSGS_STREAM,
        );
      }),
    );
    return reply.status(202).send({ results: acks.map((a) => ({ seq: a.seq })) });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.once('SIGTERM', () => {
    publisher.close();
    void app
      .close()
      .then(() => bus.close())
      .finally(() => {
        rmSync(dir, { recursive: true, force: true });
        process.exit(0);
      });
  });
  process.send?.((app.server.address() as { port: number }).port);
}

/**
 * How to stop a server process of the bench; it is also stopped when the bench exits, so
 * that none (nor its nats-server) is left behind, whatever happens here.
 */
function stopper(child: ChildProcess): () => Promise<void> {
  process.once('exit', () => child.kill('SIGTERM'));
  return async () => {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  };
}

/** The bare server, started, in a process of its own. */
async function startBare(): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child = fork(fileURLToPath(import.meta.url), ['bare-server'], {
    execArgv: [
      ...launcherFlags(),
      ...(process.env.BENCH_BARE_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      ...SOURCE_ARGS,
    ],
  });
  const stop = stopper(child);
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m) => resolve(m as number));
      child.once('exit', () => reject(new Error('the bare server did not start')));
    });
    return { url: `http://127.0.0.1:${port}/send`, pid: child.pid as number, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * The ratio of a run of alternating rounds: the median, over pairs of rounds (one in each
 * order), of the pair's geometric mean. Whichever server goes first in a round tends to run
 * faster, rest or no rest (three runs of this relay against a copy of itself, 10 rounds
 * each, 2026-11-24: the rounds where this one went first averaged 1.05–1.06, those where
 * the copy did 0.84, 0.86 and 1.01), so a round's ratio leans with its order, and the
 * median of an odd number of rounds leans toward the order that had one round more. Fewer
 * than two rounds: the median of those.
 */
function pairedRatio(ratios: number[]): number {
  const pairs: number[] = [];
  for (let i = 0; i + 1 < ratios.length; i += 2)
    pairs.push(Math.sqrt((ratios[i] as number) * (ratios[i + 1] as number)));
  return median(pairs.length > 0 ? pairs : ratios);
}

/** A server's CPU per envelope, all threads and its main thread alone. */
const serverCpu = (r: SendRun) =>
  `server ${r.perEnvelope.server.toFixed(1)} (main thread ${r.perEnvelope.serverMain.toFixed(1)})`;

/**
 * BENCH_AGAINST: this relay against another checkout's, in alternating rounds. The order
 * within a round still matters a little, so the ratio is taken over pairs of rounds.
 */
async function against(dir: string): Promise<void> {
  const bin = resolve(dir, 'relay/src/bin/svc-relay.ts');
  console.log(`bench:relay — this relay against ${dir}: N=${N} per round, ${ROUNDS} rounds, batch ${BATCH}`);
  const relays = [await startRelay(), await startRelay({}, bin, launcherFlags(dir))] as const;
  try {
    for (const r of relays) await sendAll(r.url, r.auth, r.bodies(WARMUP), r.pid, WARMUP, 0);
    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const bodies = relays.map((r) => r.bodies(N));
      const runs: SendRun[] = [];
      for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const r = relays[i] as StartedRelay;
        runs[i] = await sendAll(r.url, r.auth, bodies[i] as Buffer[], r.pid);
      }
      const [mine, other] = runs as [SendRun, SendRun];
      ratios.push(mine.rate / other.rate);
      console.log(
        `  round ${round + 1}: this ${fmt(mine.rate)} msg/s (CPU µs/envelope: ${serverCpu(mine)}), ` +
          `other ${fmt(other.rate)} msg/s (CPU µs/envelope: ${serverCpu(other)}), ratio ${(mine.rate / other.rate).toFixed(2)}`,
      );
    }
    console.log(`this/other ratio: ${pairedRatio(ratios).toFixed(2)}`);
  } finally {
    for (const r of relays) await r.stop();
  }
}

if (process.argv[2] === 'bare-server') {
  await bareServer();
} else if (AGAINST) {
  await against(AGAINST);
  process.exit(0);
} else {
  const size = JSON.stringify({ header: {}, enc: '', ciphertext: 'x'.repeat(1400), signature: '' }).length;
  console.log(
    `bench:relay — N=${N} envelopes of a 1 KiB body (~${size} bytes sealed) per round, ${ROUNDS} rounds, batch ${BATCH}, ${CONCURRENCY} requests in flight; both servers under node ${launcherFlags().join(' ') || '(no flags)'}`,
  );
  const raw = process.env.BENCH_SKIP_RAW ? undefined : await rawJetStream(size);
  console.log(
    `raw JetStream publish (async, window ${WINDOW}): ${raw ? `${fmt(raw)} msg/s` : 'skipped (BENCH_SKIP_RAW)'}`,
  );
  /** `name` ratio against raw JetStream, or nothing when the baseline was skipped */
  const perRaw = (name: string, rate: number) => (raw ? `, ${name} ${(rate / raw).toFixed(2)}` : '');
  const us = (x: number) => x.toFixed(1);
  const load = (r: SendRun) =>
    `load generator ${r.clientCores.toFixed(2)} cores, machine ${(r.machineBusy * 100).toFixed(0)}% busy; ` +
    `CPU µs/envelope: ${serverCpu(r)}, nats-server ${us(r.perEnvelope.nats)}, ` +
    `load generator ${us(r.perEnvelope.client)}`;
  const total = (r: SendRun) => r.perEnvelope.server + r.perEnvelope.nats + r.perEnvelope.client;
  const middle = (runs: SendRun[]) => [...runs].sort((x, y) => x.rate - y.rate)[runs.length >> 1] as SendRun;

  // Both servers run side by side, warmed up, and are measured in turns on the same request
  // bodies (fresh envelopes each round): the machine's speed drifts from second to second
  // here, and alternating rounds give both the same drift. The ratio is taken over pairs of
  // rounds, one in each order (pairedRatio).
  const relay = await startRelay();
  const bare = process.env.BENCH_SKIP_BARE ? undefined : await startBare();
  const relayRuns: SendRun[] = [];
  const bareRuns: SendRun[] = [];
  const ratios: number[] = [];
  try {
    // Warm-up (not measured): other envelopes, so that neither is measured while the JIT compiles it.
    if (WARMUP > 0) {
      const warm = relay.bodies(WARMUP);
      await sendAll(relay.url, relay.auth, warm, relay.pid, WARMUP, 0);
      if (bare) await sendAll(bare.url, {}, warm, bare.pid, WARMUP, 0);
    }
    for (let round = 0; round < ROUNDS; round++) {
      const bodies = relay.bodies(N);
      const measureRelay = async () => relayRuns.push(await sendAll(relay.url, relay.auth, bodies, relay.pid));
      const measureBare = async () => {
        if (bare) bareRuns.push(await sendAll(bare.url, {}, bodies, bare.pid));
      };
      if (round % 2 === 0) {
        await measureRelay();
        await measureBare();
      } else {
        await measureBare();
        await measureRelay();
      }
      const r = relayRuns[round] as SendRun;
      const b = bareRuns[round];
      if (b) ratios.push(r.rate / b.rate);
      console.log(
        `  round ${round + 1}: relay ${fmt(r.rate)} msg/s${b ? `, floor ${fmt(b.rate)} msg/s, relay/floor ${(r.rate / b.rate).toFixed(2)}` : ''}`,
      );
    }
    const b = bare ? middle(bareRuns) : undefined;
    if (b) {
      console.log(
        `bare Fastify + publish (the floor):          ${fmt(b.rate)} msg/s${perRaw('floor/jetstream', b.rate)} (median round; ${load(b)})`,
      );
    }
    const r = middle(relayRuns);
    console.log(`relay send (HTTP + JWT + ledger + JetStream):   ${fmt(r.rate)} msg/s (median round; ${load(r)})`);
    const latency = await relay.latency();
    console.log(
      `send→delivery latency on the event stream: p50 ${latency.p50.toFixed(1)} ms, p99 ${latency.p99.toFixed(1)} ms`,
    );
    if (b) {
      // Both runs are bound by the machine's CPU: the ratio of the CPU all three processes spend
      // per envelope predicts relay/floor, and moves less than the rates when other work
      // shares the machine.
      console.log(
        `CPU per envelope, all three processes: floor ${us(total(b))} µs, relay ${us(total(r))} µs (floor ÷ relay ${(total(b) / total(r)).toFixed(2)}, information)`,
      );
    }
  } finally {
    await relay.stop();
    await bare?.stop();
  }

  const floorRate = bare ? middle(bareRuns).rate : undefined;
  const pgMissing = process.env.BENCH_SKIP_POSTGRES ? 'BENCH_SKIP_POSTGRES' : postgresUnavailable();
  if (pgMissing) console.log(`relay on a PostgreSQL ledger: skipped (${pgMissing})`);
  else {
    const server = await startPostgres();
    try {
      const db = await server.createDatabase();
      const pg = await startRelay({ SVC_RELAY_LEDGER_DSN_FILE: db.dsnFile });
      try {
        if (WARMUP > 0) await sendAll(pg.url, pg.auth, pg.bodies(WARMUP), pg.pid, WARMUP, 0);
        const runs: SendRun[] = [];
        for (let round = 0; round < ROUNDS; round++) runs.push(await sendAll(pg.url, pg.auth, pg.bodies(N), pg.pid));
        const m = middle(runs);
        console.log(
          `relay send on a PostgreSQL ledger:              ${fmt(m.rate)} msg/s (median round; ${load(m)})${
            floorRate ? `, relay/floor ${(m.rate / floorRate).toFixed(2)}` : ''
          }`,
        );
      } finally {
        await pg.stop();
      }
    } finally {
      await server.stop();
    }
  }
  console.log(`relay/jetstream ratio: ${raw ? (middle(relayRuns).rate / raw).toFixed(2) : 'n/a (BENCH_SKIP_RAW)'}`);
  if (ratios.length > 1) {
    console.log(
      `relay/floor by round: ${ratios.map((x) => x.toFixed(2)).join(', ')} (from ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)})`,
    );
  }
  console.log(`relay/floor ratio: ${ratios.length > 0 ? pairedRatio(ratios).toFixed(2) : 'n/a (BENCH_SKIP_BARE)'}`);
  process.exit(0);
}
