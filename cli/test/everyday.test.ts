/** Everyday CLI behaviour: refusals before anything is sent, the queued send, deregister, start, wording. */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENT, DAEMON_STATUS, fakeLink, statusWith, svc, withTempHome } from './helpers.js';

const agents = { status: () => statusWith(AGENT) };
/** What the daemon answers a direct reply. */
const REPLIED = {
  message_id: 'm2',
  conversation_id: 'dm:1001:bob',
  to: 'bob',
  sent_at: 't',
  status: 'accepted',
  state: 'sent',
};
const daemonStatus = DAEMON_STATUS;

describe('send refuses what cannot be a message', () => {
  it.each([
    [['send', 'bob', '']],
    [['send', 'bob', '-m', '   ']],
    [['send', '--to', 'bob', '']],
    [['reply', 'm1', '']],
  ])('svc %j: empty content is a usage error and nothing is sent', async (argv) => {
    const { link, calls } = fakeLink(agents);
    const r = await svc(argv, { link });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/empty/);
    expect(calls.filter((c) => c.method === 'send' || c.method === 'reply')).toEqual([]);
  });

  it.each([
    [['send', 'bob', 'plain words', '--content-type', 'media']],
    [['reply', 'm1', 'plain words', '--content-type', 'media']],
  ])('svc %j: media without an attachment is a usage error', async (argv) => {
    const { link, calls } = fakeLink(agents);
    const r = await svc(argv, { link });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/media is for attachments/);
    expect(calls.filter((c) => c.method === 'send' || c.method === 'reply')).toEqual([]);
  });

  it('reply --file sends the file, its content the caption, with the path made absolute', async () => {
    const { link, calls } = fakeLink({ ...agents, reply: () => REPLIED });
    const r = await svc(['reply', 'm1', 'the plan', '--file', 'package.json', '--as', 'alice'], { link });
    expect(r.code, r.stderr).toBe(0);
    expect(calls.find((c) => c.method === 'reply')?.args).toEqual([
      'alice',
      { message_id: 'm1', content: 'the plan', content_type: 'media', file_path: resolve('package.json') },
    ]);
    const missing = await svc(['reply', 'm1', '--file', 'no-such-file', '--as', 'alice'], { link });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--file: no file no-such-file/);
  });

  it('reply -m TEXT, as send takes it; given twice over, refused', async () => {
    const { link, calls } = fakeLink({ ...agents, reply: () => REPLIED });
    const r = await svc(['reply', 'm1', '-m', 'noon works', '--as', 'alice'], { link });
    expect(r.code, r.stderr).toBe(0);
    expect(calls.find((c) => c.method === 'reply')?.args).toEqual([
      'alice',
      { message_id: 'm1', content: 'noon works', content_type: 'text' },
    ]);
    const twice = await svc(['reply', 'm1', 'a', '--message', 'b', '--as', 'alice'], { link });
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/Give the content once; got CONTENT and --message/);
  });
});

describe('a send while the relay is unreachable', () => {
  const queued = {
    message_id: 'm1',
    conversation_id: 'dm:1001:bob',
    to: 'bob',
    sent_at: 't',
    status: 'queued' as const,
    state: 'queued' as const,
  };

  it('exits 0 saying it is queued', async () => {
    const { link } = fakeLink({ ...agents, send: () => queued });
    const r = await svc(['send', 'bob', 'hello'], { link });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Queued m1 for bob .*sends it when it answers/);
  });

  it("a new message the relay answers 'duplicate' for: sent, and what to do if no receipt comes", async () => {
    const { link } = fakeLink({ ...agents, send: () => ({ ...queued, status: 'duplicate', state: 'sent' }) });
    const r = await svc(['send', 'bob', 'hello'], { link });
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'Sent m1 to bob (conversation dm:1001:bob), but the relay answered that it already had it, which it cannot have: if no delivery receipt comes (svc read shows it delivered), send it again.\n',
    );
  });

  it('--json has "state": "queued"', async () => {
    const { link } = fakeLink({ ...agents, send: () => queued });
    const r = await svc(['send', 'bob', 'hello', '--json'], { link });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ state: 'queued', status: 'queued' });
  });
});

describe('deregister', () => {
  const withKind = (kind: 'agent' | 'local') => ({
    ...agents,
    getAgent: () => AGENT,
    deregister: () => undefined,
    status: () => ({
      ...daemonStatus,
      agents: [{ name: 'alice', agent_number: '1001', deployment: 'home', session: 'connected' as const, kind }],
    }),
  });

  it('revokes on the relay by default and says so', async () => {
    const { link, calls } = fakeLink(withKind('agent'));
    const r = await svc(['deregister', 'alice', '--yes', '--json'], { link });
    expect(r.code).toBe(0);
    expect(calls.find((c) => c.method === 'deregister')?.args).toEqual(['alice', { revoke: true }]);
    expect(JSON.parse(r.stdout)).toMatchObject({ name: 'alice', removed: true, revoked: true });
  });

  it('--local only forgets it, and says it was not revoked', async () => {
    const { link, calls } = fakeLink(withKind('agent'));
    const r = await svc(['deregister', 'alice', '--yes', '--local'], { link });
    expect(r.code).toBe(0);
    expect(calls.find((c) => c.method === 'deregister')?.args).toEqual(['alice', { revoke: false }]);
    expect(r.stdout).toMatch(/not revoked/);
  });

  it('an agent of this machine alone: says there was no relay to revoke it on, not that it was revoked', async () => {
    const { link } = fakeLink(withKind('local'));
    const r = await svc(['deregister', 'alice', '--yes'], { link });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      'Removed alice (1001) from this machine (an agent of this machine alone: no relay to revoke it on).\n',
    );
    const json = await svc(['deregister', 'alice', '--yes', '--json'], { link });
    expect(JSON.parse(json.stdout)).toMatchObject({ name: 'alice', removed: true, revoked: false });
  });
});

describe('start', () => {
  const status = DAEMON_STATUS;

  it.each([[['start']], [['start', '-b']]])(
    'svc %j with a running daemon succeeds and says it already runs',
    async (argv) => {
      const autostarts: boolean[] = [];
      const { link } = fakeLink({ status: () => status });
      const r = await svc(argv, { link, connected: (a) => autostarts.push(a) });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(
        'The svc daemon already runs (pid 42, version 0.1.0, home /h); stop it with `svc stop` (same SVC_HOME).\n',
      );
      expect(autostarts).toEqual([false]);
    },
  );

  it('svc agent list with the vault locked warns too (the table shows every agent offline)', async () => {
    const warning = 'the file vault is locked: the passphrase (SVC_VAULT_PASSPHRASE) is wrong';
    const locked = { ...status, vault: { kind: 'file-encrypted' as const, warning, locked: true as const } };
    const { link } = fakeLink({ status: () => locked, listAgents: () => [] });
    const r = await svc(['agent', 'list', '--json'], { link });
    expect(r.stdout).toBe('[]\n');
    expect(r.stderr).toBe(`svc: warning: no agent can sign in: ${warning}\n`);
  });

  it('svc start with the vault locked warns that no agent can sign in, and why', async () => {
    const warning = 'the file vault is locked: the passphrase (SVC_VAULT_PASSPHRASE) is wrong';
    const locked = { ...status, vault: { kind: 'file-encrypted' as const, warning, locked: true as const } };
    const r = await svc(['start', '-b'], { link: fakeLink({ status: () => locked }).link });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`svc: warning: no agent can sign in: ${warning}\n`);
    // a warning of an open vault (a plain file) is doctor's to list, not start's
    const plain = { ...status, vault: { kind: 'file-plain' as const, warning: 'unencrypted' } };
    expect((await svc(['start', '-b'], { link: fakeLink({ status: () => plain }).link })).stderr).toBe('');
  });

  it.each([[['start', '--json']], [['start', '-b', '--json']]])(
    'svc %j prints one JSON object: the status, and that it already ran',
    async (argv) => {
      const { link } = fakeLink({ status: () => status });
      const r = await svc(argv, { link });
      expect(JSON.parse(r.stdout)).toEqual({ ...status, already_running: true, foreground: false });
    },
  );

  it('svc start -b without a daemon starts one and says it runs', async () => {
    const autostarts: boolean[] = [];
    const { link } = fakeLink({ status: () => status });
    const r = await svc(['start', '-b'], {
      link,
      connected: (a) => {
        autostarts.push(a);
        if (!a) throw new Error('no daemon answers');
      },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      'The svc daemon runs in the background (pid 42, version 0.1.0, home /h); stop it with `svc stop` (same SVC_HOME).\n',
    );
    expect(autostarts).toEqual([false, true]);
  });

  it('says what it starts: the daemon, not a "local stack"', async () => {
    const help = (await svc(['start', '--help'])).stdout;
    expect(help).toMatch(/start the svc daemon/);
    expect(help).not.toMatch(/stack|bridge \(/);
  });
});

describe('--json where docs/cli.md says every command has it', () => {
  it('stop --json says what it stopped, or that nothing ran', async () => {
    // the daemon's process: one that has exited already (stop waits until it is gone)
    const { pid } = spawnSync(process.execPath, ['-e', '']);
    const { link } = fakeLink({ status: () => ({ ...daemonStatus, pid }), shutdown: () => undefined });
    const r = await svc(['stop', '--json'], { link });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ target: 'daemon', stopped: true });
    const none = await svc(['stop', '--json'], {
      connected: () => {
        throw new Error('no daemon answers');
      },
    });
    expect(JSON.parse(none.stdout)).toEqual({ target: 'daemon', stopped: false });
  });

  it('stop whose daemon has not exited within the wait says it is still stopping (daemon_stopping), exit 1', async () => {
    // a process that runs on: this test's parent
    const pid = process.ppid;
    const { link } = fakeLink({ status: () => ({ ...daemonStatus, pid }), shutdown: () => undefined });
    const r = await svc(['stop', '--json'], { link, stopWaitMs: 0 });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      error: 'daemon_stopping',
      message: expect.stringContaining(`The svc daemon (pid ${pid}) is stopping but has not exited within 0 s`),
    });
  });

  it('config list --json: the profile and its settings, secrets masked', async () => {
    await withTempHome(async (home) => {
      const env = { SVC_HOME: home };
      await svc(['config', 'set', 'api-key', 'sk-secret-value-1234'], { env });
      await svc(['config', 'set', 'name', 'ann'], { env });
      const r = await svc(['config', 'list', '--json'], { env });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({ profile: 'default', settings: { name: 'ann' } });
      expect(out.settings['api-key']).not.toContain('secret');
    });
  });
});

describe('a group send', () => {
  it('names the group once: it is both the recipient and the conversation', async () => {
    const id = 'grp:1001:AAAAAAAAAAAAAAAAAAAAAA';
    const sent = { message_id: 'm1', conversation_id: id, to: id, sent_at: 't', status: 'accepted' as const };
    const { link } = fakeLink({ ...agents, send: () => ({ ...sent, state: 'sent' as const }) });
    const r = await svc(['send', '--conversation-id', id, 'hello'], { link });
    expect(r.stdout).toBe(`Sent m1 to ${id}.\n`);
    const queued = fakeLink({ ...agents, send: () => ({ ...sent, status: 'queued', state: 'queued' }) }).link;
    expect((await svc(['send', '--conversation-id', id, 'hello'], { link: queued })).stdout).toMatch(
      new RegExp(`^Queued m1 for ${id}: `),
    );
  });
});

describe('wording', () => {
  it.each([
    ['account list', 'Accounts'],
    ['discover -q x --scope local', 'Network discovery'],
  ])('svc %s: a grammatical hosted-only refusal', async (line, what) => {
    const r = await svc(line.split(' '), { link: fakeLink().link });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${what}: only the hosted service offers this`);
    expect(r.stderr).not.toMatch(/ is a hosted-service feature/);
  });

  it('msg check says it returns unacknowledged messages since the last check', async () => {
    const help = (await svc(['msg', 'check', '--help'])).stdout;
    expect(help).toMatch(/since the last check that are still unacknowledged/);
  });
});
