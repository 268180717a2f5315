/**
 * bench:tui — how long `svc tui` takes to draw on a real terminal, seen from outside: tmux
 * (a private socket) runs each command in a new window, and a tmux control-mode client
 * reports the bytes the window receives as they arrive (no screen polling). Against a warm
 * daemon: a real relay (`svc-relay serve`, its nats-server), bob and alice enrolled on their
 * own SVC_HOMEs as bench:cli does, one message from alice in bob's inbox.
 *
 * Timed from the `new-window` command to the first bytes that show:
 *  - `node -e …` prints a line: the floor (a node process in a new pty);
 *  - `svc --version`: the CLI bundle through its code cache;
 *  - `svc tui`, first frame: any frame of the dashboard (its header);
 *  - `svc tui`, dashboard: the frame with bob's inbox (`Inbox · 1 unread`), the one the
 *    issue's 500 ms is about.
 * Each figure is the median of BENCH_RUNS runs (default 15) after one warm-up run, the
 * commands taking turns so that a busy machine slows them alike. BENCH_TUI_COMPARE=PATH
 * (another checkout's cli/bin/svc.cjs, built) times its `svc tui` too, in the same turns:
 * a before/after on the same machine load.
 *
 * Last line: `svc tui dashboard: N ms (x.x× node)`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from '@svc/test-harness';
import { registerWithCli } from '@svc/test-harness/cli-agents';
import { spawnRelay } from '@svc/test-harness/relay-process';
import { type Home, newHome, svc, svcJson } from '@svc/test-harness/svc-cli';
import { median, requireCliBundle } from './common.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SVC = join(ROOT, 'cli', 'bin', 'svc.cjs');
const SOCKET = `svc-bench-tui-${randomBytes(4).toString('hex')}`;
const TIMEOUT_MS = 20_000;
const COMPARE = process.env.BENCH_TUI_COMPARE;

requireCliBundle('bench:tui');

const quote = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;
// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escape sequences
const ANSI = /\u001b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)|[@-Z\\-_=>])/g;

/** What `%output` carries: octal escapes for control bytes and `\`, the rest as sent (UTF-8). */
function decodeOutput(data: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < data.length; i++) {
    if (data[i] === '\\' && /^[0-7]{3}$/.test(data.slice(i + 1, i + 4))) {
      bytes.push(Number.parseInt(data.slice(i + 1, i + 4), 8));
      i += 3;
    } else bytes.push(...Buffer.from(data[i] as string, 'utf8'));
  }
  return Buffer.from(bytes);
}

interface Watch {
  /** the window's output so far, escape sequences removed */
  text: string;
  raw: Buffer[];
  /** first time (ms, performance.now()) each awaited pattern matched */
  seen: Map<RegExp, number>;
  patterns: RegExp[];
}

/** One tmux server on a private socket and a control-mode client that reports pane output. */
class Tmux {
  private client: ChildProcess;
  private buffer = '';
  private panes = new Map<string, Watch>();
  /** output of a pane not yet known (its new-window reply still to come), with its time */
  private early = new Map<string, Array<[number, Buffer]>>();
  private replies: Array<(lines: string[]) => void> = [];
  /** the lines of the reply being read; `mine` false: a block this client did not ask for */
  private reply: { lines: string[]; mine: boolean } | undefined;

  constructor() {
    // the session's own window only idles; the size is fixed, as a terminal's would be
    execFileSync('tmux', [
      '-L',
      SOCKET,
      '-f',
      '/dev/null',
      'new-session',
      '-d',
      '-s',
      'bench',
      '-x',
      '110',
      '-y',
      '30',
    ]);
    // a command that exits at once keeps its window until killed: tmux reads all it wrote
    execFileSync('tmux', ['-L', SOCKET, 'set', '-g', 'remain-on-exit', 'on']);
    this.client = spawn('tmux', ['-L', SOCKET, '-C', 'attach', '-t', 'bench'], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.client.stdout?.setEncoding('utf8');
    this.client.stdout?.on('data', (d: string) => this.onData(d));
  }

  /** Sizes the windows as a 110×30 terminal would (a control client's default is 80×24). */
  async start() {
    await this.command('refresh-client -C 110x30');
  }

  private onData(d: string) {
    const now = performance.now();
    this.buffer += d;
    let nl = this.buffer.indexOf('\n');
    while (nl >= 0) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      nl = this.buffer.indexOf('\n');
      if (this.reply) {
        if (line.startsWith('%end ') || line.startsWith('%error ')) {
          const { lines, mine } = this.reply;
          this.reply = undefined;
          if (mine) this.replies.shift()?.(lines);
        } else this.reply.lines.push(line);
        continue;
      }
      if (line.startsWith('%begin ')) {
        // `%begin TIME NUMBER FLAGS`: flags 1 for a command this client sent
        this.reply = { lines: [], mine: line.split(' ')[3] === '1' };
        continue;
      }
      const out = /^%output (%\d+) (.*)$/.exec(line);
      if (out) {
        const [pane, data] = [out[1] as string, decodeOutput(out[2] as string)];
        const w = this.panes.get(pane);
        if (w) this.receive(w, data, now);
        else this.early.set(pane, [...(this.early.get(pane) ?? []), [now, data]]);
      }
    }
  }

  private receive(w: Watch, data: Buffer, at: number) {
    w.raw.push(data);
    w.text = Buffer.concat(w.raw).toString('utf8').replace(ANSI, '');
    for (const p of w.patterns) if (!w.seen.has(p) && p.test(w.text)) w.seen.set(p, at);
  }

  private command(cmd: string): Promise<string[]> {
    return new Promise((resolve) => {
      this.replies.push(resolve);
      this.client.stdin?.write(`${cmd}\n`);
    });
  }

  /**
   * Runs `argv` with `env` in a new window; resolves with the ms from the command to the
   * first output matching each pattern, then closes the window (the process gets SIGHUP).
   */
  async time(argv: string[], env: Record<string, string>, patterns: RegExp[]): Promise<number[]> {
    const command = ['env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv].map(quote).join(' ');
    const w: Watch = { text: '', raw: [], seen: new Map(), patterns };
    const t0 = performance.now();
    const [id] = await this.command(`new-window -d -P -F '#{window_id} #{pane_id}' ${quote(command)}`);
    const [window, pane] = (id ?? '').split(' ') as [string, string];
    this.panes.set(pane, w);
    for (const [at, data] of this.early.get(pane) ?? []) this.receive(w, data, at);
    this.early.delete(pane);
    try {
      await until(
        () => w.seen.size === patterns.length,
        TIMEOUT_MS,
        `${argv.join(' ')} to show ${patterns.join(', ')}`,
        2,
      );
    } catch (err) {
      console.error(`screen so far:\n${w.text}`);
      throw err;
    }
    await this.command(`kill-window -t ${window}`);
    this.panes.delete(pane);
    return patterns.map((p) => (w.seen.get(p) as number) - t0);
  }

  async close() {
    await this.command('kill-server').catch(() => undefined);
    this.client.kill();
  }
}

const relay = await spawnRelay();
const homes: Home[] = [newHome('bench-alice'), newHome('bench-bob')];
const tmux = new Tmux();
let cleaning: Promise<void> | undefined;
const cleanUp = () => {
  cleaning ??= (async () => {
    await tmux.close();
    for (const home of homes) await svc(home, ['--no-autostart', 'stop']).catch(() => undefined);
    await relay.stop();
    for (const home of homes) rmSync(home.dir, { recursive: true, force: true });
    rmSync(relay.dataDir, { recursive: true, force: true });
  })();
  return cleaning;
};
// an interrupted run leaves no daemon, relay or tmux server behind
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
}
try {
  await tmux.start();
  await Promise.all(
    homes.map((home, i) => registerWithCli(relay, home, i === 0 ? 'alice' : 'bob', { grantFlags: [] })),
  );
  const [alice, bob] = homes as [Home, Home];
  await svcJson(alice, ['send', 'bob', '-m', 'hello bob, from the bench', '--json']);
  await until(async () => (await svcJson<unknown[]>(bob, ['inbox', '--json'])).length === 1, 30_000, 'bob has mail');

  const node = [process.execPath, '-e', 'process.stdout.write("node ready\\n"); setTimeout(() => {}, 60000)'];
  const runs: Array<[string, string[], Record<string, string>, RegExp[]]> = [
    ['node -e (prints a line)', node, {}, [/node ready/]],
    ['svc --version', [process.execPath, SVC, '--version'], {}, [/\d+\.\d+\.\d+/]],
    // the header is the first line of every frame: connecting, daemon down or the dashboard
    ['svc tui', [process.execPath, SVC, 'tui'], bob.env, [/svc · /, /Inbox · 1 unread/]],
  ];
  if (COMPARE) runs.push(['compared', [process.execPath, COMPARE, 'tui'], bob.env, [/svc · /, /Inbox · 1 unread/]]);
  for (const [, argv, env, patterns] of runs) await tmux.time(argv, env, patterns);
  const times = runs.map(([, , , patterns]) => patterns.map((): number[] => []));
  for (let i = 0; i < RUNS; i++) {
    for (const [r, [, argv, env, patterns]] of runs.entries()) {
      const t = await tmux.time(argv, env, patterns);
      for (const [p, ms] of t.entries()) times[r]?.[p]?.push(ms);
    }
  }
  const [floor, version, tuiFirst, tuiDashboard, otherFirst, otherDashboard] = times.flat().map(median) as [
    number,
    number,
    number,
    number,
    number?,
    number?,
  ];
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  console.log(`bench:tui: median of ${RUNS} runs each, tmux window to first output, daemon warm (load ${load})`);
  const row = (what: string, ms: number) =>
    console.log(`  ${what.padEnd(32)} ${ms.toFixed(1).padStart(7)} ms  ${(ms / floor).toFixed(2)}× node`);
  row('node -e (prints a line)', floor);
  row('svc --version', version);
  row('svc tui: first frame', tuiFirst);
  row('svc tui: dashboard with the inbox', tuiDashboard);
  if (otherFirst !== undefined && otherDashboard !== undefined) {
    console.log(`  compared with ${COMPARE}:`);
    row('svc tui: first frame', otherFirst);
    row('svc tui: dashboard with the inbox', otherDashboard);
  }
  console.log(`svc tui dashboard: ${Math.round(tuiDashboard)} ms (${(tuiDashboard / floor).toFixed(1)}× node)`);
} finally {
  await cleanUp();
}
