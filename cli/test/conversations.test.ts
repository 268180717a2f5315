/** conv … and context …: flags, limits, exactly-one-of rules, and the local context files. */
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DaemonClientError } from '@svc/daemon/client';
import { archivedMessage } from '@svc/test-harness/fixtures';
import { describe, expect, it } from 'vitest';
import { AGENT, fakeEvents, fakeLink, statusWith, svc, withTempHome } from './helpers.js';

const agents = { status: () => statusWith(AGENT) };
/** a message's sort key: sent time ~ message id */
const KEY = '2025-01-31T12:00:00.000Z~m1';
/** the daemon's answer to a send to bob */
const SENT = {
  message_id: 'm1',
  conversation_id: 'dm:1001:bob',
  to: 'bob',
  sent_at: 't',
  status: 'accepted' as const,
  state: 'sent' as const,
};
const GROUP = {
  conversation_id: 'grp:1001:AAAAAAAAAAAAAAAAAAAAAA',
  conversation_type: 'group' as const,
  name: 'team',
  creator: '1001',
  members: [
    { number: '1001', role: 'creator' as const, active: true },
    { number: 'bob', role: 'member' as const, active: true },
  ],
  me: { role: 'creator' as const, active: true },
};
/** A message bob sent in GROUP, as this agent (1001) archived it. */
const fromBobInGroup = (m: Parameters<typeof archivedMessage>[0]) =>
  archivedMessage({
    conversation_id: GROUP.conversation_id,
    conversation_type: 'group',
    from: 'bob',
    to: '1001',
    ...m,
  });

describe('conv', () => {
  it('create-group sends the participants (space or comma separated) and prints the roster', async () => {
    const { link, calls } = fakeLink({ ...agents, createConversation: () => GROUP });
    const r = await svc(['conv', 'create-group', 'team', '-d', 'us', '-p', 'bob', 'carol,dave'], { link });
    expect(r.code).toBe(0);
    expect(calls.find((c) => c.method === 'createConversation')?.args).toEqual([
      'alice',
      { kind: 'group', name: 'team', description: 'us', members: ['bob', 'carol', 'dave'] },
    ]);
    expect(r.stdout).toMatch(/Created group grp:1001:/);
    expect(r.stdout).toMatch(/bob\s+member\s+active/);
  });

  it('create-broadcast takes subscribers; --json prints the conversation', async () => {
    const { link, calls } = fakeLink({
      ...agents,
      createConversation: () => ({ ...GROUP, conversation_type: 'broadcast' }),
    });
    const r = await svc(['conv', 'create-broadcast', 'news', '-s', 'bob', '--json'], { link });
    expect(r.code).toBe(0);
    expect(calls.find((c) => c.method === 'createConversation')?.args[1]).toEqual({
      kind: 'broadcast',
      name: 'news',
      members: ['bob'],
    });
    expect(JSON.parse(r.stdout)).toMatchObject({ conversation_type: 'broadcast' });
  });

  it('a participant that is not an agent number is a usage error, nothing is created', async () => {
    const { link, calls } = fakeLink(agents);
    const r = await svc(['conv', 'create-group', 'team', '-p', 'bob/../x'], { link });
    expect(r.code).toBe(2);
    expect(calls.some((c) => c.method === 'createConversation')).toBe(false);
  });

  it('invite: -e and -r (member or observer only)', async () => {
    const { link, calls } = fakeLink({ ...agents, invite: () => GROUP });
    expect((await svc(['conv', 'invite', GROUP.conversation_id, '-e', 'carol', '-r', 'observer'], { link })).code).toBe(
      0,
    );
    expect(calls.find((c) => c.method === 'invite')?.args).toEqual([
      'alice',
      GROUP.conversation_id,
      { number: 'carol', role: 'observer' },
    ]);
    expect((await svc(['conv', 'invite', GROUP.conversation_id, '-e', 'carol', '-r', 'admin'], { link })).code).toBe(2);
    expect((await svc(['conv', 'invite', GROUP.conversation_id], { link })).code).toBe(2);
  });

  it('list (and bare conv) default to 20; messages default to 50 and pass --since', async () => {
    const { link, calls } = fakeLink({ ...agents, conversations: () => [GROUP], conversationMessages: () => [] });
    expect((await svc(['conv'], { link })).stdout).toMatch(/grp:1001:\S+\s+group\s+team/);
    await svc(['conv', 'list', '--limit', '5'], { link });
    expect(calls.filter((c) => c.method === 'conversations').map((c) => c.args[1])).toEqual([
      { limit: 20 },
      { limit: 5 },
    ]);
    await svc(['conv', 'messages', GROUP.conversation_id], { link });
    await svc(['conv', 'messages', GROUP.conversation_id, '--limit', '2', '--since', KEY], { link });
    // a timestamp is taken as the instant, in the sort key's form
    await svc(['conv', 'messages', GROUP.conversation_id, '--since', '2025-01-31T13:00:00+01:00'], { link });
    expect(calls.filter((c) => c.method === 'conversationMessages').map((c) => c.args[2])).toEqual([
      { limit: 50 },
      { limit: 2, since: KEY },
      { limit: 50, since: '2025-01-31T12:00:00.000Z' },
    ]);
  });

  it('messages --since refuses what is neither a sort key nor a timestamp, as read --since does', async () => {
    const { link, calls } = fakeLink({ ...agents, conversationMessages: () => [] });
    for (const since of ['garbage', 'k1', '2025-13-45', `${KEY.split('~')[0]}~`]) {
      const r = await svc(['conv', 'messages', GROUP.conversation_id, '--since', since], { link });
      expect(r.code, since).toBe(2);
      expect(r.stderr).toMatch(/SORT_KEY .* or an ISO-8601 timestamp|message id after ~/);
    }
    expect(calls.filter((c) => c.method === 'conversationMessages')).toEqual([]);
  });

  it('messages: the paging hint leads to the messages not shown', async () => {
    const page = ['m1', 'm2'].map((id, i) =>
      archivedMessage({ message_id: id, sort_key: `2025-01-0${i + 1}T00:00:00.000Z~${id}` }),
    );
    const { link } = fakeLink({ ...agents, conversationMessages: () => page });
    // without --since the page is the latest: the way on is from the first message, not after the newest
    const latest = await svc(['conv', 'messages', 'bob', '--limit', '2'], { link });
    expect(latest.stdout).not.toContain("--since '2025-01-02T00:00:00.000Z~m2'");
    expect(latest.stdout).toContain('to page from the first message: --since 1970-01-01');
    const after = await svc(['conv', 'messages', 'bob', '--limit', '2', '--since', '1970-01-01'], { link });
    expect(after.stdout).toContain("next page: --since '2025-01-02T00:00:00.000Z~m2'");
    const short = await svc(['conv', 'messages', 'bob', '--limit', '3'], { link });
    expect(short.stdout).not.toMatch(/--since/);
  });

  it('invite: --agent is the plain name of -e/--el-number (which keeps working)', async () => {
    const { link, calls } = fakeLink({ ...agents, invite: () => GROUP });
    expect((await svc(['conv', 'invite', GROUP.conversation_id, '--agent', 'carol'], { link })).code).toBe(0);
    expect((await svc(['conv', 'invite', GROUP.conversation_id, '--el-number', 'dave'], { link })).code).toBe(0);
    expect(calls.filter((c) => c.method === 'invite').map((c) => (c.args[2] as { number: string }).number)).toEqual([
      'carol',
      'dave',
    ]);
    const both = await svc(['conv', 'invite', GROUP.conversation_id, '--agent', 'carol', '-e', 'dave'], { link });
    expect(both.code).toBe(2);
    expect((await svc(['conv', 'invite', GROUP.conversation_id, '-e', 'carol,dave'], { link })).code).toBe(2);
    expect((await svc(['conv', 'invite', GROUP.conversation_id, '--help'])).stdout).toMatch(/--agent <agent_number>/);
  });

  it('search passes every filter; limit up to 100, offset up to 10000', async () => {
    const { link, calls } = fakeLink({ ...agents, searchConversations: () => [] });
    const r = await svc(
      [
        'conv',
        'search',
        '--participant',
        'bob',
        '--after',
        '2026-01-01T00:00:00Z',
        '--before',
        '2026-02-01T00:00:00Z',
        '--type',
        'structured',
        '--sort',
        'oldest',
        '--limit',
        '100',
        '--offset',
        '10000',
      ],
      { link },
    );
    expect(r.code).toBe(0);
    expect(calls.find((c) => c.method === 'searchConversations')?.args[1]).toEqual({
      participant: 'bob',
      after: '2026-01-01T00:00:00Z',
      before: '2026-02-01T00:00:00Z',
      type: 'structured',
      sort: 'oldest',
      limit: 100,
      offset: 10000,
    });
    for (const bad of [
      ['--limit', '101'],
      ['--offset', '10001'],
      ['--type', 'control'],
      ['--sort', 'newest'],
      ['--after', 'yesterday'],
      ['--after', '2026-02-01T00:00:00Z', '--before', '2026-01-01T00:00:00Z'],
    ]) {
      expect((await svc(['conv', 'search', ...bad], { link })).code, bad.join(' ')).toBe(2);
    }
  });

  it('read marks a gap that is still open, a late arrival and a repeat', async () => {
    const base = {
      conversation_id: GROUP.conversation_id,
      conversation_type: 'group' as const,
      from: 'bob',
      to: '1001',
    };
    const messages = [
      archivedMessage({
        ...base,
        message_id: 'm4',
        content: 'four',
        seq: 4,
        sequence: { gap: { from: 2, to: 3 }, missing: [3] },
      }),
      archivedMessage({ ...base, message_id: 'm2', content: 'two', seq: 2, sequence: { late: true, duplicates: 1 } }),
    ];
    const { link } = fakeLink({ ...agents, read: () => messages });
    const r = await svc(['read', GROUP.conversation_id], { link });
    expect(r.stdout).toMatch(/#4 GAP: #3 missing/);
    expect(r.stdout).toMatch(/#2 late \(reordered\); repeated 1x/);
  });

  it('inbox: a group message is to the group (a reply goes to all of it), a direct one to you', async () => {
    const group = fromBobInGroup({ message_id: 'g1', content: 'to the team' });
    const direct = archivedMessage({ from: 'bob', to: '1001', message_id: 'd1', content: 'just you' });
    const { link } = fakeLink({ ...agents, inbox: () => [group, direct] });
    const lines = (await svc(['inbox'], { link })).stdout.split('\n');
    expect(lines.find((l) => l.includes('to the team'))).toMatch(new RegExp(`\\bbob\\s+${GROUP.conversation_id}\\s`));
    expect(lines.find((l) => l.includes('just you'))).toMatch(/\bbob\s+1001\s/);
  });
});

describe('context', () => {
  const ctx = (home: string, argv: string[], stdin?: string, env: Record<string, string> = {}) =>
    svc(['context', ...argv], { env: { SVC_HOME: home, ...env }, ...(stdin !== undefined ? { stdin } : {}) });
  /** A local agent, as its agent.json says (context needs no daemon: it reads these). */
  const addAgent = async (home: string, name: string, number: string, capabilities = ['http-relay']) => {
    await mkdir(join(home, 'agents', name), { recursive: true });
    await writeFile(
      join(home, 'agents', name, 'agent.json'),
      JSON.stringify({ name, agent_number: number, capabilities }),
    );
  };
  /** A home whose only agent is ann (1001): her notes are in NOTES. */
  const withAgentHome = (fn: (home: string) => Promise<void>) =>
    withTempHome(async (home) => {
      await addAgent(home, 'ann', '1001');
      await fn(home);
    });
  const NOTES = (home: string, ...rest: string[]) => join(home, 'agents', 'ann', 'context', ...rest);

  it('needs exactly one of --conversation-id or --peer (--label is --peer)', async () => {
    await withAgentHome(async (home) => {
      for (const cmd of ['save', 'append', 'edit', 'delete', 'load']) {
        expect((await ctx(home, [cmd, '-m', 'x'])).code, `${cmd} with neither`).toBe(2);
        expect((await ctx(home, [cmd, '--conversation-id', 'dm:a:b', '--peer', 'bob', '-m', 'x'])).code).toBe(2);
      }
      expect((await ctx(home, ['save', '--conversation-id', 'dm:a:b', '--label', 'bob', '-m', 'x'])).code).toBe(2);
      expect((await ctx(home, ['save', '--peer', 'bob', '--label', 'carol', '-m', 'x'])).code).toBe(2);
      expect((await ctx(home, ['save', '--label', 'bob', '-m', 'x'])).code).toBe(0);
      expect((await ctx(home, ['load', '--peer', 'bob'])).stdout).toBe('x\n');
    });
  });

  it('--conversation-type only with --conversation-id, and it must match the id', async () => {
    await withAgentHome(async (home) => {
      expect((await ctx(home, ['save', '--peer', 'bob', '--conversation-type', 'group', '-m', 'x'])).code).toBe(2);
      expect(
        (await ctx(home, ['save', '--conversation-id', 'dm:a:b', '--conversation-type', 'group', '-m', 'x'])).code,
      ).toBe(2);
      const r = await ctx(home, ['save', '--conversation-id', 'grp:a:AAAAAAAAAAAAAAAA', '-m', 'plan', '--json']);
      expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'conversation', conversation_type: 'group', body: 'plan\n' });
    });
  });

  it('save refuses an existing file; append adds; edit replaces; summary kept; files readable by a person', async () => {
    await withAgentHome(async (home) => {
      expect((await ctx(home, ['save', '--conversation-id', 'dm:a:b', '-s', 'who is who', '-m', 'first'])).code).toBe(
        0,
      );
      const again = await ctx(home, ['save', '--conversation-id', 'dm:a:b', '-m', 'second']);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/context_exists|exists/);
      await ctx(home, ['append', '--conversation-id', 'dm:a:b'], 'from stdin\n');
      expect((await ctx(home, ['load', '--conversation-id', 'dm:a:b'])).stdout).toBe('first\nfrom stdin\n');
      const edited = JSON.parse(
        (await ctx(home, ['edit', '--conversation-id', 'dm:a:b', '-m', 'all new', '--json'])).stdout,
      );
      const loaded = JSON.parse((await ctx(home, ['load', '--conversation-id', 'dm:a:b', '--json'])).stdout);
      expect(loaded).toMatchObject({ body: 'all new\n', summary: 'who is who' });
      // what edit answered is what load reads back (it said 'all new', without the file's newline)
      expect(edited.body).toBe(loaded.body);
      const file = await readFile(NOTES(home, 'conversations', 'dm%3Aa%3Ab.md'), 'utf8');
      expect(file).toMatch(
        /^---\nconversation: dm:a:b\nconversation_type: direct\nsummary: who is who\nupdated_at: .*\n---\n\nall new\n$/,
      );
      // no temporary file is left beside it
      expect(await readdir(NOTES(home, 'conversations'))).toEqual(['dm%3Aa%3Ab.md']);
    });
  });

  it('edit of a missing file fails; load of one prints nothing; delete has no confirmation', async () => {
    await withAgentHome(async (home) => {
      expect((await ctx(home, ['edit', '--peer', 'bob', '-m', 'x'])).code).toBe(1);
      const none = await ctx(home, ['load', '--peer', 'bob']);
      expect(none).toMatchObject({ code: 0, stdout: '' });
      await ctx(home, ['save', '--peer', 'bob', '-m', 'x']);
      const del = await ctx(home, ['delete', '--peer', 'bob']);
      expect(del.code).toBe(0);
      expect((await ctx(home, ['load', '--peer', 'bob'])).stdout).toBe('');
      expect((await ctx(home, ['delete', '--peer', 'bob'])).code).toBe(1);
    });
  });

  it('list --type conversation|peer', async () => {
    await withAgentHome(async (home) => {
      await ctx(home, ['save', '--peer', 'bob', '-m', 'x']);
      await ctx(home, ['save', '--conversation-id', 'dm:a:b', '-m', 'y']);
      const all = JSON.parse((await ctx(home, ['list', '--json'])).stdout) as Array<{ kind: string; id: string }>;
      expect(all.map((n) => `${n.kind}:${n.id}`)).toEqual(['conversation:dm:a:b', 'peer:bob']);
      const peers = JSON.parse((await ctx(home, ['list', '--type', 'peer', '--json'])).stdout) as unknown[];
      expect(peers).toHaveLength(1);
      expect((await ctx(home, ['list', '--type', 'group'])).code).toBe(2);
    });
  });

  it('each agent has its own notes: --as (name or number) or SVC_AGENT chooses, else the only agent', async () => {
    await withAgentHome(async (home) => {
      await addAgent(home, 'bob', '1002');
      await addAgent(home, 'relay-uplink', 'u1', ['nats-relay']);
      expect((await ctx(home, ['save', '--as', 'bob', '--peer', 'carol', '-m', 'met on monday'])).code).toBe(0);
      expect((await ctx(home, ['load', '--as', '1002', '--peer', 'carol'])).stdout).toBe('met on monday\n');
      expect((await ctx(home, ['load', '--peer', 'carol'], undefined, { SVC_AGENT: 'bob' })).stdout).toBe(
        'met on monday\n',
      );
      // ann's notes are not bob's
      expect((await ctx(home, ['load', '--as', 'ann', '--peer', 'carol'])).stdout).toBe('');
      expect(JSON.parse((await ctx(home, ['list', '--as', 'ann', '--json'])).stdout)).toEqual([]);
      expect(await readdir(join(home, 'agents', 'bob', 'context', 'peers'))).toEqual(['carol.md']);
      // two agents (the uplink identity does not count): the choice is the user's
      const none = await ctx(home, ['list']);
      expect(none.code).toBe(1);
      expect(none.stderr).toBe(
        'svc: error: Several local agents (ann, bob); choose one with --as NAME or SVC_AGENT. (agent_required)\n',
      );
      const unknown = await ctx(home, ['list', '--as', 'nobody']);
      expect(unknown.stderr).toBe('svc: error: No local agent nobody; see svc agent list. (unknown_agent)\n');
    });
  });

  it('notes from before they were kept per agent go to the only agent, or stay put with a warning', async () => {
    const earlier = async (home: string) => {
      await mkdir(join(home, 'context', 'peers'), { recursive: true });
      await writeFile(join(home, 'context', 'peers', 'carol.md'), '---\npeer: carol\nupdated_at: t\n---\n\nold note\n');
    };
    await withAgentHome(async (home) => {
      await earlier(home);
      const r = await ctx(home, ['load', '--peer', 'carol']);
      expect(r).toMatchObject({ code: 0, stdout: 'old note\n', stderr: '' });
      expect(await readdir(NOTES(home, 'peers'))).toEqual(['carol.md']);
      expect(await readdir(join(home, 'context', 'peers'))).toEqual([]);
    });
    await withAgentHome(async (home) => {
      await addAgent(home, 'bob', '1002');
      await earlier(home);
      const r = await ctx(home, ['list', '--as', 'bob']);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe(
        `svc: warning: context notes from before notes were kept per agent are still in ${join(home, 'context', 'peers')}: move each into $SVC_HOME/agents/NAME/context/ of the agent it belongs to\n`,
      );
      expect(await readdir(join(home, 'context', 'peers'))).toEqual(['carol.md']);
    });
  });

  it('an id never names a path outside the context directory', async () => {
    await withAgentHome(async (home) => {
      expect((await ctx(home, ['save', '--peer', '../x', '-m', 'x'])).code).toBe(2);
      expect((await ctx(home, ['save', '--conversation-id', '..', '-m', 'x'])).code).toBe(0);
      expect(await readdir(NOTES(home, 'conversations'))).toEqual(['%2E%2E.md']);
    });
  });
});

describe('attachments on the command line', () => {
  it('send --file (or --attach) passes the absolute path and the caption; read --save saves every attachment shown', async () => {
    await withTempHome(async (home) => {
      const { writeFile } = await import('node:fs/promises');
      const path = join(home, 'a.txt');
      await writeFile(path, 'hello');
      const { link, calls } = fakeLink({
        ...agents,
        send: () => SENT,
      });
      expect((await svc(['send', 'bob', 'a caption', '--attach', path], { link })).code).toBe(0);
      expect(calls.find((c) => c.method === 'send')?.args[1]).toEqual({
        to: 'bob',
        content: 'a caption',
        content_type: 'media',
        file_path: path,
      });
      const r = await svc(['send', '--conversation-id', 'grp:1001:AAAAAAAAAAAAAAAA', '--file', path], { link });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/conversation media is unsupported/);
    });
  });

  it('read --save DIR', async () => {
    const media = archivedMessage({
      conversation_id: 'dm:1001:bob',
      from: 'bob',
      to: '1001',
      content_type: 'media',
      content: '{}',
    });
    const { link, calls } = fakeLink({
      ...agents,
      read: () => [media, { ...media, message_id: 'm2', content_type: 'text' }],
      saveAttachment: (_a, id, dir) => ({
        message_id: id,
        path: `${dir}/x.bin`,
        size: 3,
        media_type: 'x',
        name: 'x.bin',
      }),
    });
    const r = await svc(['read', 'bob', '--save', '/tmp/out'], { link });
    expect(r.code).toBe(0);
    expect(calls.filter((c) => c.method === 'saveAttachment').map((c) => c.args)).toEqual([
      ['alice', 'm1', '/tmp/out'],
    ]);
    expect(r.stdout).toMatch(/saved \/tmp\/out\/x.bin \(3 bytes/);
  });
});

const terminalWriter = (isTTY: boolean, write: (s: string) => void) => ({ isTTY, write });

describe('transfer progress', () => {
  it('draws a bar on a terminal while an attachment uploads, and nothing when stderr is not one', async () => {
    const { run } = await import('../src/program.js');
    const { progressLine } = await import('../src/progress.js');
    expect(progressLine('a.bin', 'upload', 1024 * 1024, 4 * 1024 * 1024, 8)).toBe(
      '↑ [##......]  25% 1.0/4.0 MiB a.bin',
    );
    await withTempHome(async (home) => {
      const { writeFile } = await import('node:fs/promises');
      const path = join(home, 'a.bin');
      await writeFile(path, 'x');
      for (const tty of [true, false]) {
        let drawn!: () => void;
        const seen = new Promise<void>((resolve) => {
          drawn = resolve;
        });
        const { link } = fakeLink({
          ...agents,
          events: () =>
            fakeEvents(
              [
                { type: 'transfer', agent: 'alice', direction: 'upload', name: 'a.bin', done: 5, total: 10 },
                { type: 'transfer', agent: 'alice', direction: 'upload', name: 'a.bin', done: 10, total: 10 },
              ],
              { hold: true, drained: drawn },
            ),
          // the send returns once the bar has had its events (a TTY subscribes; otherwise nothing waits)
          send: async () => {
            if (tty) await seen;
            return SENT;
          },
        });
        let stderr = '';
        const code = await run(['send', 'bob', '--file', path], {
          env: { SVC_HOME: home },
          stdout: { write: () => undefined },
          // a terminal's stderr has isTTY; the Writer type does not say so
          stderr: terminalWriter(tty, (s) => {
            stderr += s;
          }),
          connect: async () => link,
        });
        expect(code).toBe(0);
        if (tty) expect(stderr).toContain('100% 0.0/0.0 MiB a.bin\n');
        else expect(stderr).toBe('');
      }
    });
  });
});

describe('attachments as a person reads them', () => {
  /** A media message as the sender's daemon writes it: the descriptor of `plain`, sealed with a fresh key. */
  const mediaOf = (plain: Buffer, caption?: string) => {
    const key = randomBytes(32);
    const nonce = randomBytes(12);
    const c = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
    const sealed = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
    const descriptor = {
      svc: 'attachment/v1',
      blob_id: 'blob1',
      name: 'report.txt',
      media_type: 'text/plain',
      size: plain.length,
      digest: createHash('sha256').update(sealed).digest('base64url'),
      key: key.toString('base64url'),
      nonce: nonce.toString('base64url'),
      ...(caption === undefined ? {} : { caption }),
    };
    return archivedMessage({
      conversation_id: 'dm:1001:bob',
      from: 'bob',
      to: '1001',
      content_type: 'media',
      content: JSON.stringify(descriptor),
    });
  };

  it('read shows the file name, size and caption, not the descriptor; --json keeps the descriptor', async () => {
    const media = mediaOf(Buffer.from('hello'), 'the report');
    const { link } = fakeLink({ ...agents, read: () => [media] });
    const r = await svc(['read', 'bob'], { link });
    expect(r.stdout).toContain('[file] report.txt (5 bytes, text/plain): the report');
    expect(r.stdout).not.toContain('attachment/v1');
    const j = await svc(['read', 'bob', '--json'], { link });
    expect(JSON.parse(j.stdout)[0].content).toBe(media.content);
  });

  it('read and conv messages show a roster change as a sentence; --json keeps what the peer sent', async () => {
    const control = fromBobInGroup({
      content_type: 'control',
      content: JSON.stringify({ op: 'create', kind: 'group', name: 'team' }),
    });
    const { link } = fakeLink({ ...agents, read: () => [control], conversationMessages: () => [control] });
    for (const args of [
      ['read', GROUP.conversation_id],
      ['conv', 'messages', GROUP.conversation_id],
    ]) {
      const r = await svc(args, { link });
      expect(r.stdout, args.join(' ')).toContain('bob created the group “team”');
      expect(r.stdout, args.join(' ')).not.toContain('"op"');
    }
    const j = await svc(['read', GROUP.conversation_id, '--json'], { link });
    expect(JSON.parse(j.stdout)[0].content).toBe(control.content);
  });

  it('read --save: a file one sent that its recipient saved (gone from the relay) is said so, and the rest are saved', async () => {
    const inbound = mediaOf(Buffer.from('hello'));
    const outbound = { ...inbound, message_id: 'mine', direction: 'outbound' as const, from: '1001', to: 'bob' };
    const { link, calls } = fakeLink({
      ...agents,
      read: () => [outbound, inbound],
      saveAttachment: (_a, id) => {
        if (id === 'mine') throw new DaemonClientError('unknown_blob', 'The relay no longer has it.', 404);
        return { message_id: id, path: '/tmp/x/report.txt', size: 5, media_type: 'text/plain', name: 'report.txt' };
      },
    });
    const r = await svc(['read', 'bob', '--save', '/tmp/x'], { link });
    expect(r.code, r.stderr).toBe(0);
    expect(calls.filter((c) => c.method === 'saveAttachment').map((c) => c.args[1])).toEqual([
      'mine',
      inbound.message_id,
    ]);
    expect(r.stdout).toContain('saved /tmp/x/report.txt (5 bytes, text/plain)');
    expect(r.stdout).toContain(
      'not saved: the file of message mine, sent by you; the relay deleted it once its recipient saved it',
    );
    const j = await svc(['read', 'bob', '--save', '/tmp/x', '--json'], { link });
    expect(JSON.parse(j.stdout).not_saved).toEqual([
      { message_id: 'mine', reason: expect.stringContaining('sent by you') },
    ]);
    // a file sent to one that is gone is still an error: it was never saved anywhere
    const { link: inboundGone } = fakeLink({
      ...agents,
      read: () => [inbound],
      saveAttachment: () => {
        throw new DaemonClientError('unknown_blob', 'The relay no longer has it.', 404);
      },
    });
    expect((await svc(['read', 'bob', '--save', '/tmp/x'], { link: inboundGone })).code).toBe(1);
  });

  it('a second read --save: what the daemon found already saved is said so', async () => {
    const media = mediaOf(Buffer.from('hello'));
    const { link } = fakeLink({
      ...agents,
      read: () => [media],
      saveAttachment: () => ({
        message_id: media.message_id,
        path: '/tmp/x/report.txt',
        size: 5,
        media_type: 'text/plain',
        name: 'report.txt',
        already_saved: true,
      }),
    });
    const r = await svc(['read', 'bob', '--save', '/tmp/x'], { link });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('already saved /tmp/x/report.txt (5 bytes, text/plain)');
  });
});
