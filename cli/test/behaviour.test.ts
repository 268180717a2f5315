import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DaemonClientError, localStackFiles } from '@svc/daemon/client';
import { encodeEnrollmentCode } from '@svc/shared';
import { describe, expect, it } from 'vitest';
import { AGENT, DAEMON_STATUS, fakeEvents, fakeLink, statusWith, svc, withTempHome } from './helpers.js';

const two = () => [AGENT, { ...AGENT, name: 'bob', agent_number: '1002' }];

describe('agent selection', () => {
  const ack = (_agent: string, id: string) => ({ message_id: id, acked_at: '2025-01-01T00:00:00.000Z' });

  it('an explicit --as wins over SVC_AGENT', async () => {
    const { link, calls } = fakeLink({ ack });
    const r = await svc(['msg', 'ack', 'm1', '--as', 'bob', '--json'], { link, env: { SVC_AGENT: 'alice' } });
    expect(r.code).toBe(0);
    expect(calls).toEqual([{ method: 'ack', args: ['bob', 'm1'] }]);
  });

  it('SVC_AGENT selects the agent without --as', async () => {
    const { link, calls } = fakeLink({ ack });
    await svc(['msg', 'ack', 'm1'], { link, env: { SVC_AGENT: 'alice' } });
    expect(calls).toEqual([{ method: 'ack', args: ['alice', 'm1'] }]);
  });

  it('a leaf-uplink identity (nats-relay only) is not counted: the one agent beside it is used', async () => {
    const uplink = { ...AGENT, name: 'uplink-b', agent_number: 'uplink-b', capabilities: ['nats-relay'] };
    const bob = { ...AGENT, name: 'bob', agent_number: 'bob', capabilities: ['http-relay'] };
    const { link, calls } = fakeLink({ status: () => statusWith(bob, uplink), inbox: () => [] });
    const r = await svc(['inbox', '--json'], { link });
    expect(r.stderr).toBe('');
    expect(calls.map((c) => [c.method, c.args[0]])).toEqual([
      ['status', undefined],
      ['inbox', 'bob'],
    ]);
    // with only the uplink, there is no agent to act as
    const alone = await svc(['inbox'], { link: fakeLink({ status: () => statusWith(uplink) }).link });
    expect(alone.stderr).toContain('(unknown_agent)');
  });

  it('without either, the only local agent is used', async () => {
    const { link, calls } = fakeLink({ status: () => statusWith(AGENT), ack });
    await svc(['msg', 'ack', 'm1'], { link });
    expect(calls.map((c) => c.method)).toEqual(['status', 'ack']);
    expect(calls[1]!.args[0]).toBe('alice');
  });

  it('several local agents and no choice is agent_required', async () => {
    const { link } = fakeLink({ status: () => statusWith(...two()) });
    const r = await svc(['inbox', '--json'], { link });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ error: 'agent_required', message: expect.stringContaining('--as') });
  });

  it('sync without a choice processes every local agent', async () => {
    const { link, calls } = fakeLink({
      status: () => DAEMON_STATUS,
      listAgents: two,
      sync: (agent) => ({ agent, fetched: 1, archived: 1, rejected: 0, receipts: 0 }),
    });
    const r = await svc(['sync', '--json'], { link });
    expect(r.code).toBe(0);
    expect(calls.filter((c) => c.method === 'sync').map((c) => c.args[0])).toEqual(['alice', 'bob']);
    expect(JSON.parse(r.stdout)).toHaveLength(2);
  });
});

describe('read', () => {
  it('shows each message state; delivered is the receipt for sent ones and the arrival for inbound ones', async () => {
    const base = {
      conversation_id: 'dm:alice:bob',
      conversation_type: 'direct' as const,
      content_type: 'text',
      received_at: null,
      acked_at: null,
      muted: false,
    };
    const { link } = fakeLink({
      status: () => statusWith(AGENT),
      read: () => [
        {
          ...base,
          message_id: 'm1',
          direction: 'outbound',
          from: 'alice',
          to: 'bob',
          content: 'hi',
          sent_at: 'S1',
          delivered_at: 'D1',
          state: 'delivered',
        },
        {
          ...base,
          message_id: 'm2',
          direction: 'inbound',
          from: 'bob',
          to: 'alice',
          content: 'yo',
          sent_at: 'S2',
          received_at: 'R2',
          delivered_at: null,
          state: 'received',
          muted: true,
        },
        {
          ...base,
          message_id: 'm3',
          direction: 'outbound',
          from: 'alice',
          to: 'bob',
          content: 'there?',
          sent_at: 'S3',
          delivered_at: null,
          state: 'queued',
        },
      ],
    });
    const r = await svc(['read', 'bob'], { link });
    expect(r.code).toBe(0);
    const [header, ...rows] = r.stdout.trimEnd().split('\n');
    expect(header?.split(/\s+/)).toEqual(['SENT', 'FROM', 'TO', 'TYPE', 'ID', 'STATE', 'DELIVERED', 'CONTENT']);
    expect(rows.map((l) => l.split(/\s+/).slice(5, 7))).toEqual([
      ['delivered', 'D1'],
      ['received/muted', 'R2'],
      ['queued', '-'],
    ]);
  });
});

describe('errors and exit status', () => {
  it('--json prints {error, message} on stdout and exits 1 on a daemon error', async () => {
    const { link } = fakeLink({
      getAgent: () => {
        throw Object.assign(new Error('No local agent carol.'), { code: 'unknown_agent', status: 404 });
      },
    });
    const r = await svc(['whoami', '--as', 'carol', '--json'], { link });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ error: 'unknown_agent', message: 'No local agent carol.' });
    expect(r.stderr).toContain('No local agent carol.');
  });

  it('human mode prints one line on stderr and nothing on stdout', async () => {
    const { link } = fakeLink({
      listDeployments: () => {
        throw Object.assign(new Error('The vault is locked.'), { code: 'vault_locked' });
      },
    });
    const r = await svc(['deployment', 'list'], { link });
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'svc: error: The vault is locked. (vault_locked)\n' });
  });

  it('usage errors exit 2 (and --json still gets an error object)', async () => {
    expect((await svc(['no-such-command'])).code).toBe(2);
    expect((await svc(['send', '--bogus'])).code).toBe(2);
    const r = await svc(['msg', 'ack', '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error).toBe('usage_error');
  });

  it('--no-autostart reaches the link without autostart, and a missing daemon says how to start it', async () => {
    let autostart: boolean | undefined;
    const { link } = fakeLink({ listDeployments: () => [] });
    await svc(['--no-autostart', 'deployment', 'list'], {
      link,
      connected: (a) => {
        autostart = a;
      },
    });
    expect(autostart).toBe(false);
    await svc(['deployment', 'list'], {
      link,
      connected: (a) => {
        autostart = a;
      },
    });
    expect(autostart).toBe(true);
  });

  it('a missing daemon with --no-autostart is daemon_unavailable', async () => {
    await withTempHome(async (home) => {
      const { run } = await import('../src/program.js');
      let out = '';
      const code = await run(['--no-autostart', 'deployment', 'list', '--json'], {
        env: { SVC_HOME: home },
        stdout: {
          write: (s) => {
            out += s;
          },
        },
        stderr: { write() {} },
      });
      expect(code).toBe(1);
      const body = JSON.parse(out);
      expect(body.error).toBe('daemon_unavailable');
      expect(body.message).toContain('daemon.sock');
    });
  });

  it('--version needs no daemon', async () => {
    const r = await svc(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});

describe('msg check', () => {
  it.each(['0', '31', '-1', '2.5', 'x'])('--wait %s is refused locally', async (wait) => {
    const { link, calls } = fakeLink();
    const r = await svc(['msg', 'check', '--as', 'alice', '--wait', wait, '--json'], { link });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error).toBe('validation_failed');
    expect(JSON.parse(r.stdout).message).toContain('1 to 30');
    expect(calls).toEqual([]);
  });

  it('--wait followed by another option says the seconds were left out', async () => {
    const { link, calls } = fakeLink();
    const r = await svc(['msg', 'check', '--as', 'alice', '--wait', '--json'], { link });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'svc: error: --wait needs its number of seconds (1 to 30) before the next option; got the option --json. (validation_failed)\n',
    );
    expect(calls).toEqual([]);
  });

  it('a number option followed by another option says its value was left out', async () => {
    const r = await svc(['conv', 'list', '--limit', '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--limit needs its value before the next option (--json)');
  });

  it.each([
    ['1', 1],
    ['30', 30],
  ])('--wait %s is sent as the long-poll', async (wait, n) => {
    const { link, calls } = fakeLink({ check: () => [] });
    const r = await svc(['msg', 'check', '--as', 'alice', '--wait', wait, '--ack'], { link });
    expect(r.code).toBe(0);
    expect(calls).toEqual([{ method: 'check', args: ['alice', { wait: n, ack: true }] }]);
  });

  it('--stream requires --wait', async () => {
    const r = await svc(['msg', 'check', '--as', 'alice', '--stream']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--stream requires --wait');
  });

  it('--stream prints JSONL until stopped', async () => {
    const ctl = new AbortController();
    let n = 0;
    const { link } = fakeLink({
      check: () => {
        n += 1;
        if (n === 2) ctl.abort();
        return [{ message_id: `m${n}`, content: 'hi' }];
      },
    });
    const r = await svc(['msg', 'check', '--as', 'alice', '--wait', '5', '--stream'], { link, signal: ctl.signal });
    expect(r.code).toBe(0);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).message_id),
    ).toEqual(['m1', 'm2']);
  });
});

describe('abuse report', () => {
  it.each([
    ['too short', 'short', 2],
    ['only spaces around a short text', '   123456789   ', 2],
    ['too long', 'x'.repeat(2001), 2],
  ])('refuses a reason that is %s, before calling the relay', async (_what, reason, code) => {
    const { link, calls } = fakeLink();
    const r = await svc(['abuse', 'report', '1002', '--reason', reason, '--as', 'alice', '--json'], { link });
    expect(r.code).toBe(code);
    expect(JSON.parse(r.stdout).error).toBe('validation_failed');
    expect(calls).toEqual([]);
  });

  it('sends a valid reason (trimmed) to the daemon', async () => {
    const { link, calls } = fakeLink({
      report: () => ({ report_id: 'rpt_1', received_at: '2025-01-01T00:00:00Z' }),
    });
    const r = await svc(['abuse', 'report', '1002', '--reason', '  spam spam spam  ', '--as', 'alice', '--json'], {
      link,
    });
    expect(r.code).toBe(0);
    expect(calls).toEqual([{ method: 'report', args: ['alice', '1002', { reason: 'spam spam spam' }] }]);
    expect(JSON.parse(r.stdout)).toEqual({ report_id: 'rpt_1', received_at: '2025-01-01T00:00:00Z' });
  });

  it('a relay refusal (the daemon passes on its code) becomes its error code', async () => {
    const { link } = fakeLink({
      relate: () => {
        throw new DaemonClientError('cannot_target_self', 'An agent cannot block itself.', 400);
      },
    });
    const r = await svc(['abuse', 'block', '1001', '--as', 'alice', '--json'], { link });
    expect(r.code).toBe(2); // one's own number: an argument to fix, like any invalid one
    expect(JSON.parse(r.stdout)).toEqual({ error: 'cannot_target_self', message: 'An agent cannot block itself.' });
  });
});

describe("an argument the daemon finds invalid is a usage error, as the CLI's own check is", () => {
  const refuse = (message: string) => () => {
    throw new DaemonClientError('validation_failed', message, 400);
  };

  it.each([
    [
      ['deployment', 'fetch', '--url', '127.0.0.1:8921', '--trust', 'package.json'],
      { fetchDeployment: refuse('not a URL: 127.0.0.1:8921') },
    ],
    [['register', '--local', '--name', 'bad name!'], { registerLocal: refuse('invalid local agent name bad name!') }],
    [
      ['register', '--local', '--name', 'ann'],
      { registerLocal: refuse('a local agent named ann exists; choose --name') },
    ],
  ] as const)('svc %j exits 2 (validation_failed)', async (args, answers) => {
    const { link } = fakeLink(answers);
    const r = await svc([...args], { link });
    expect(r.stderr).toMatch(/\(validation_failed\)\n$/);
    expect(r.code).toBe(2);
  });

  it.each([
    [['agent', 'webhook', 'set', 'notaurl'], 'invalid_endpoint_url'],
    [['agent', 'update', '--timezone', 'Mars/Olympus'], 'invalid_timezone'],
  ] as const)("svc %j: the relay's own code for the value, exit 2", async (args, code) => {
    const { link } = fakeLink({
      updateProfile: () => {
        throw new DaemonClientError(code, `refused: ${code}`, 400);
      },
    });
    const r = await svc([...args, '--as', 'alice', '--json'], { link });
    expect(JSON.parse(r.stdout)).toEqual({ error: code, message: `refused: ${code}` });
    expect(r.code).toBe(2);
  });

  it('send --file of something that is not a file is refused before the daemon is asked', async () => {
    await withTempHome(async (home) => {
      const { link, calls } = fakeLink();
      const r = await svc(['send', 'bob', '--file', home, '--as', 'alice'], { link });
      expect(r.stderr).toBe(`svc: error: --file: ${home} is a directory; name a file. (validation_failed)\n`);
      expect(r.code).toBe(2);
      expect(calls).toEqual([]);
    });
  });
});

describe('reply', () => {
  it('without content names what reply takes (CONTENT, --message, --stdin or --file), as send does', async () => {
    const r = await svc(['reply', 'm1', '--as', 'alice'], { link: fakeLink().link });
    expect(r.stderr).toBe(
      'svc: error: Give the message content: CONTENT, --message TEXT, --stdin or --file PATH. (validation_failed)\n',
    );
    expect(r.code).toBe(2);
  });
});

describe('hosted-only and unbuilt commands', () => {
  it.each([
    'account --json',
    'account list --json',
    'account upgrade pro --yes',
    'auth login',
    'auth logout --deployment home',
    'auth mint-token --no-save',
    'auth tokens list --json',
    'auth tokens revoke pat_1',
    'space my --json',
    'space create lab -t a -t b',
    'discover -q x --scope local --json',
    'send @lab/general hi --as alice --json',
    'agent recover --name a --number 1 --api-key k',
  ])('svc %s is not_supported_self_hosted', async (line) => {
    const { link, calls } = fakeLink();
    const argv = line.split(' ');
    const r = await svc(argv, { link });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('(not_supported_self_hosted)');
    if (argv.includes('--json')) expect(JSON.parse(r.stdout).error).toBe('not_supported_self_hosted');
    expect(calls).toEqual([]);
  });

  it('svc tui without a terminal says so instead of drawing', async () => {
    const r = await svc(['tui']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('svc tui needs a terminal');
  });

  it('svc start --local-only asks the daemon for the local nats-server (ports from the flags, env, or 4222/8222)', async () => {
    const { link, calls } = fakeLink({
      localStack: () => ({ running: true, pid: 7, local_only: true, url: 'nats://127.0.0.1:4222' }),
    });
    expect((await svc(['start', '--local-only'], { link })).code).toBe(0);
    expect(
      (await svc(['start', '--local-only', '--port', '5000'], { link, env: { SVC_MONITOR_PORT: '9000' } })).code,
    ).toBe(0);
    expect(calls.map((c) => c.args)).toEqual([
      ['start', { local_only: true, port: 4222, monitor_port: 8222, listen: '127.0.0.1' }],
      ['start', { local_only: true, port: 5000, monitor_port: 9000, listen: '127.0.0.1' }],
    ]);
  });

  it('svc start --as UPLINK (or a port) asks for the leaf of the hub with that nats-relay identity', async () => {
    const { link, calls } = fakeLink({ localStack: () => ({ running: true, uplink: 'nats-leaf://hub:7422' }) });
    expect((await svc(['start', '--as', 'uplink-a'], { link })).code).toBe(0);
    expect((await svc(['start', '--port', '5000'], { link })).code).toBe(0);
    expect(calls.map((c) => c.args)).toEqual([
      ['start', { local_only: false, port: 4222, monitor_port: 8222, listen: '127.0.0.1', as: 'uplink-a' }],
      ['start', { local_only: false, port: 5000, monitor_port: 8222, listen: '127.0.0.1' }],
    ]);
  });

  it('svc stop --local asks the daemon; without one, refuses what it cannot prove it owns', async () => {
    const { link, calls } = fakeLink({ localStack: () => ({ stopped: true }) });
    expect((await svc(['stop', '--local'], { link })).stdout).toContain('Stopped the local nats-server');
    expect(calls.map((c) => c.args)).toEqual([['stop']]);
    await withTempHome(async (home) => {
      // no pid file: this home started no server, nothing to stop (as with a daemon that runs none)
      const none = await svc(['stop', '--local'], { env: { SVC_HOME: home } });
      expect(none).toMatchObject({ code: 0, stdout: 'The local nats-server was not running.\n', stderr: '' });
      // a pid file naming a process that is not provably ours (this test's own): refused, nothing signalled
      const { pidFile, configFile } = localStackFiles(join(home, 'run'));
      mkdirSync(dirname(pidFile), { recursive: true });
      writeFileSync(pidFile, JSON.stringify({ pid: process.pid, config_file: configFile, started_at: 'now' }));
      const r = await svc(['stop', '--local'], { env: { SVC_HOME: home } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('process_not_owned');
      expect(existsSync(pidFile)).toBe(true);
    });
  });
});

describe('wired commands', () => {
  it('send takes TO_NUMBER and CONTENT positionally, or --to and -m', async () => {
    const { link, calls } = fakeLink({
      send: (_a, i) => ({ message_id: 'm1', conversation_id: 'c1', to: i.to, sent_at: 't', status: 'accepted' }),
    });
    expect((await svc(['send', '1002', 'hello', '--as', 'alice'], { link })).code).toBe(0);
    expect((await svc(['send', '--to', '1002', '-m', 'hi', '--as', 'alice'], { link })).code).toBe(0);
    expect(
      (await svc(['send', '--to', '1002', 'hey', '--as', 'alice', '--content-type', 'structured'], { link })).code,
    ).toBe(0);
    expect(calls.map((c) => c.args[1])).toEqual([
      { to: '1002', content: 'hello', content_type: 'text' },
      { to: '1002', content: 'hi', content_type: 'text' },
      { to: '1002', content: 'hey', content_type: 'structured' },
    ]);
  });

  it('send --stdin reads the content; two content sources are a usage error', async () => {
    const { link, calls } = fakeLink({
      send: (_a, i) => ({ message_id: 'm1', conversation_id: 'c1', to: i.to, sent_at: 't', status: 'accepted' }),
    });
    expect((await svc(['send', '1002', '--stdin', '--as', 'alice'], { link, stdin: 'from stdin\n' })).code).toBe(0);
    expect(calls[0]!.args[1]).toMatchObject({ content: 'from stdin' });
    expect((await svc(['send', '1002', 'x', '-m', 'y', '--as', 'alice'], { link })).code).toBe(2);
    // a missing file is refused before the daemon is asked
    expect((await svc(['send', '1002', '--file', 'a.png', '--as', 'alice', '--json'], { link })).stdout).toContain(
      'no file a.png',
    );
  });

  it('agent update needs at least one option and patches the profile', async () => {
    const { link, calls } = fakeLink({ updateProfile: () => ({ agent_number: '1001' }) });
    expect((await svc(['agent', 'update', '--as', 'alice'], { link })).code).toBe(2);
    expect(calls).toEqual([]);
    await svc(['agent', 'update', '--as', 'alice', '--name', 'Alice', '--timezone', 'Europe/Paris', '--json'], {
      link,
    });
    expect(calls[0]).toEqual({
      method: 'updateProfile',
      args: ['alice', { display_name: 'Alice', timezone: 'Europe/Paris' }],
    });
  });

  it('agent webhook set prints the secret once', async () => {
    const secret = 'a'.repeat(64);
    const { link, calls } = fakeLink({
      updateProfile: () => ({
        endpoint_url: 'https://x.example/hook',
        webhook_secret_set: true,
        webhook_secret: secret,
      }),
    });
    const r = await svc(['agent', 'webhook', 'set', 'https://x.example/hook', '--as', 'alice'], { link });
    expect(r.stdout).toContain(secret);
    expect(r.stdout).toContain('shown once');
    expect(calls[0]).toEqual({ method: 'updateProfile', args: ['alice', { endpoint_url: 'https://x.example/hook' }] });
    await svc(['agent', 'webhook', 'clear', '--as', 'alice'], { link });
    expect(calls[1]!.args[1]).toEqual({ endpoint_url: null });
    // an empty URL (an unset variable) is refused: the relay would clear the URL and its secret
    for (const empty of ['', '  ']) {
      const r = await svc(['agent', 'webhook', 'set', empty, '--as', 'alice'], { link });
      expect(r.stderr).toBe(
        'svc: error: The webhook URL is empty: give an https URL, or remove the webhook with svc agent webhook clear. (validation_failed)\n',
      );
      expect(r.code).toBe(2);
    }
    expect(calls).toHaveLength(2);
  });

  it('keys status says when the relay could not be asked, rather than "not uploaded"', async () => {
    const status = { agent: 'alice', signing_public_key: 's', encryption_public_key: 'e', rotation: 0, peers: [] };
    const down = fakeLink({ keys: () => ({ ...status, relay_version: null, relay_error: 'relay_unreachable' }) });
    expect((await svc(['keys', 'status', '--as', 'alice'], { link: down.link })).stdout).toMatch(
      /relay version: +unknown: the relay could not be asked \(relay_unreachable\)/,
    );
    const none = fakeLink({ keys: () => ({ ...status, relay_version: null }) });
    expect((await svc(['keys', 'status', '--as', 'alice'], { link: none.link })).stdout).toMatch(
      /relay version: +not uploaded/,
    );
  });

  it('keys status shows a changed peer key clearly, with the fingerprints MCP, the TUI and the dashboard show', async () => {
    // a key as the daemon holds it (32 bytes, base64url), and its fingerprint, computed here
    const key = (fill: number) => Buffer.alloc(32, fill).toString('base64url');
    const fp = (k: string) =>
      createHash('sha256').update(Buffer.from(k, 'base64url')).digest('hex').slice(0, 32).match(/.{4}/g)!.join(':');
    const { link } = fakeLink({
      keys: () => ({
        agent: 'alice',
        signing_public_key: key(1),
        encryption_public_key: key(2),
        rotation: 1,
        relay_version: 2,
        peers: [
          {
            agent_number: '1002',
            signing_public_key: key(3),
            encryption_public_key: key(4),
            pinned_at: '2025-01-01T00:00:00Z',
            changed: { signing_public_key: key(5), encryption_public_key: key(6), seen_at: '2025-02-01T00:00:00Z' },
          },
          {
            agent_number: '1003',
            signing_public_key: key(7),
            encryption_public_key: key(8),
            pinned_at: '2025-01-01T00:00:00Z',
          },
          {
            agent_number: '1004',
            signing_public_key: key(9),
            encryption_public_key: key(10),
            pinned_at: '2025-01-01T00:00:00Z',
            unsigned: true,
          },
        ],
      }),
    });
    const r = await svc(['keys', 'status', '--as', 'alice'], { link });
    expect(r.stdout).toMatch(new RegExp(`1004\\s+UNSIGNED\\s+\\S+\\s+${fp(key(9))}`));
    expect(r.stdout).toContain(
      "NOTE: 1004's key record is unsigned (enrolled before key records were signed): its messages are verified, but nothing is sent to it until it publishes a signed one (its owner runs svc keys backfill).\n",
    );
    expect(r.stdout).toMatch(new RegExp(`^fingerprint: +${fp(key(1))}$`, 'm'));
    expect(r.stdout).toMatch(/1002\s+CHANGED 2025-02-01/);
    expect(r.stdout).toContain(`${fp(key(3))} → ${fp(key(5))}`);
    expect(r.stdout).toContain(`WARNING: 1002 now presents a different key`);
    expect(r.stdout).toContain(`fingerprint ${fp(key(5))}). Confirm it with them out of band`);
    expect(r.stdout).toMatch(new RegExp(`1003\\s+pinned\\s+\\S+\\s+${fp(key(7))}`));
  });

  it('watch --json prints one object per inbound message', async () => {
    const msg = (id: string, direction: string) => ({
      message_id: id,
      direction,
      content: 'x',
      conversation_type: 'direct',
    });
    // the stream stays open, as the daemon's does, until the interrupt
    const interrupt = new AbortController();
    const { link } = fakeLink({
      events: () =>
        fakeEvents(
          [
            { type: 'message', agent: 'alice', message: msg('m1', 'inbound') },
            { type: 'message', agent: 'alice', message: msg('m2', 'outbound') },
            { type: 'session', agent: 'alice', state: 'connected' },
            { type: 'message', agent: 'alice', message: msg('m3', 'inbound') },
          ],
          { hold: true, drained: () => interrupt.abort() },
        ),
    });
    const r = await svc(['watch', '--as', 'alice', '--json'], { link, signal: interrupt.signal });
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.message_id)).toEqual(['m1', 'm3']);
    expect(lines[0]).toMatchObject({ agent: 'alice', direction: 'inbound' });
  });

  it('deployment fetch reads the trust bundle file and requires --trust', async () => {
    await withTempHome(async (home) => {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(`${home}/trust.json`, '{"keys":[]}');
      const { link, calls } = fakeLink({ fetchDeployment: () => ({ name: 'home' }) });
      expect((await svc(['deployment', 'fetch', '--url', 'https://r.example'], { link })).code).toBe(2);
      const r = await svc(
        [
          'deployment',
          'fetch',
          '--url',
          'https://r.example',
          '--trust',
          `${home}/trust.json`,
          '--name',
          'home',
          '--json',
        ],
        { link },
      );
      expect(r.code).toBe(0);
      expect(calls).toEqual([
        { method: 'fetchDeployment', args: [{ url: 'https://r.example', trust_bundle: '{"keys":[]}', name: 'home' }] },
      ]);
      const missing = await svc(['deployment', 'fetch', '--url', 'u', '--trust', `${home}/nope.json`, '--json'], {
        link,
      });
      // a path to change on the command line: a usage error, exit 2
      expect(JSON.parse(missing.stdout)).toEqual({
        error: 'validation_failed',
        message: `--trust: no file ${home}/nope.json.`,
      });
      expect(missing.code).toBe(2);
      expect(calls).toHaveLength(1);
    });
  });

  it("deployment remove: the daemon's refusal of one in use is the answer, exit 1", async () => {
    const { link, calls } = fakeLink({
      removeDeployment: (name: string) => {
        if (name === 'home') {
          throw Object.assign(new Error('Deployment home is used by local agent alice; deregister it first.'), {
            code: 'deployment_in_use',
          });
        }
      },
    });
    const used = await svc(['deployment', 'remove', 'home', '--json'], { link });
    expect(used.code).toBe(1);
    expect(JSON.parse(used.stdout)).toMatchObject({ error: 'deployment_in_use' });
    const spare = await svc(['deployment', 'remove', 'spare'], { link });
    expect(spare.code).toBe(0);
    expect(calls.filter((c) => c.method === 'removeDeployment').map((c) => c.args)).toEqual([['home'], ['spare']]);
  });

  it('register sends the enrollment code and options', async () => {
    // well-formed, which is all the CLI checks; the daemon checks its signature
    const code = encodeEnrollmentCode(
      {
        deployment_id: 'dep_1',
        tenant_id: 'ten_1',
        agent_id: 'agt_1',
        agent_number: '1001',
        capabilities: ['http-relay'],
        grant_id: 'grant_1',
        expires_at: '2030-01-01T00:00:00.000Z',
        api_url: 'https://relay.example',
      },
      'kid_1',
      new Uint8Array(64),
      new Uint8Array(32),
    );
    const { link, calls } = fakeLink({ register: () => AGENT });
    const home0 = { SVC_HOME: '/nonexistent/svc-home' };
    const r = await svc(
      [
        'register',
        '--enrollment-grant',
        code,
        '--name',
        'alice',
        '--no-discoverable',
        '--deployment',
        'home',
        '--json',
      ],
      { link, env: { SVC_HOME: '/nonexistent/svc-home' } },
    );
    expect(r.code).toBe(0);
    expect(calls).toEqual([
      {
        method: 'register',
        args: [
          {
            enrollment_code: code,
            discoverable: false,
            wait_receiving: true,
            name: 'alice',
            display_name: 'alice',
            deployment: 'home',
          },
        ],
      },
    ]);
    // --no-autostart: registration does not wait to receive (the specification's global option)
    await svc(['--no-autostart', 'register', '--enrollment-grant', code, '--json'], { link, env: home0 });
    expect(calls.pop()?.args[0]).toMatchObject({ wait_receiving: false });
    // an agent not receiving yet is said so, with the session's reason
    const late = fakeLink({ register: () => ({ ...AGENT, receiving: false, session_error: 'relay unreachable' }) });
    const text = await svc(['register', '--enrollment-grant', code], { link: late.link, env: home0 });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /\nNot receiving yet \(relay unreachable\); the daemon keeps trying, and svc agent list shows when it connects\.\n$/,
    );
    expect(text.stdout).not.toMatch(/receiving +false/);
    expect((await svc(['register'], { link })).code).toBe(2);
    // out of sight of other local users: from standard input ("-") or the environment
    const home = { SVC_HOME: '/nonexistent/svc-home' };
    const fromStdin = await svc(['register', '--enrollment-grant', '-', '--json'], {
      link,
      env: home,
      stdin: `${code}\n`,
    });
    const fromEnv = await svc(['register', '--json'], { link, env: { ...home, SVC_ENROLLMENT_GRANT: code } });
    expect([fromStdin.code, fromEnv.code]).toEqual([0, 0]);
    expect(calls.slice(1).map((c) => (c.args[0] as { enrollment_code: string }).enrollment_code)).toEqual([code, code]);
  });

  it('-v and -vv log to stderr, never stdout', async () => {
    const { link } = fakeLink({ inbox: () => [] });
    const r = await svc(['inbox', '--as', 'alice', '-vv', '--json'], { link });
    expect(r.stdout).toBe('[]\n');
    expect(r.stderr).toContain('svc: debug: agent alice (--as)');
  });
});
