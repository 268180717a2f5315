/**
 * Rendered frames of the dashboard (ink-testing-library) over a scripted source: what it
 * shows, keyboard navigation, a live update when an event arrives, a daemon that is down.
 * A real daemon is exercised in tui/test/out-of-service.test.ts, a real daemon and a real
 * terminal in e2e/test/tui-tmux.test.ts.
 */
import type {
  ArchivedMessage,
  ConversationSummary,
  DaemonEvent,
  DaemonEventStream,
  DaemonStatus,
  TrustStatus,
} from '@svc/daemon/client';
import type { OwnProfile } from '@svc/shared';
import { attachmentDescriptor } from '@svc/test-harness/fixtures';
import { render } from 'ink-testing-library';
import { createElement } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { clip, columns, Dashboard, keysLine, MessageLine, wrapLines } from './app.js';
import { loadSnapshot, type Source } from './model.js';

const status: DaemonStatus = {
  version: '0.1.0',
  pid: 4242,
  home: '/home/u/.svc',
  started_at: '2026-01-01T00:00:00.000Z',
  vault: { kind: 'file-encrypted' },
  agents: [
    { name: 'bob', agent_number: 'bob', deployment: 'dev', session: 'connected' },
    { name: 'carol', agent_number: 'carol', deployment: 'dev', session: 'offline' },
  ],
};

const msg = (id: string, from: string, content: string, minute: number, trust: 'pinned' | 'changed' = 'pinned') =>
  ({
    message_id: id,
    conversation_id: `dm:${from}:bob`,
    conversation_type: 'direct',
    direction: 'inbound',
    from,
    to: 'bob',
    content_type: 'text',
    content,
    sent_at: `2026-01-01T12:${String(minute).padStart(2, '0')}:00.000Z`,
    received_at: null,
    acked_at: null,
    delivered_at: null,
    state: 'received',
    muted: false,
    verified: { sender: from, key_fingerprint: 'ab', trust },
  }) satisfies ArchivedMessage;

/** A scripted daemon: mutable data, an event stream the test pushes into, a switch to go down. */
function fakeSource() {
  const data = {
    up: true,
    status,
    inbox: [msg('m1', 'alice', 'hello bob, lunch at noon?', 1)] as ArchivedMessage[],
    conversations: [] as ConversationSummary[],
    trust: { agent: 'bob', agent_number: 'bob', signing_key_fingerprint: 'x', peers: [], held: [] } as TrustStatus,
    reads: [] as string[],
  };
  data.conversations = [
    {
      conversation_id: 'dm:alice:bob',
      conversation_type: 'direct',
      peer: 'alice',
      last_message_at: '2026-01-01T12:01:00.000Z',
      message_count: 1,
      unread: 1,
      last_message: data.inbox[0]!,
    },
  ];
  const listeners: Array<(e: DaemonEvent | null) => void> = [];
  const down = () => Object.assign(new Error('No svc daemon answers'), { code: 'daemon_unavailable' });
  const source: Source = {
    home: '/home/u/.svc',
    status: async () => {
      if (!data.up) throw down();
      return data.status;
    },
    listDeployments: async () => [
      {
        name: 'dev',
        deployment_id: 'd1',
        api_url: 'https://relay.example',
        tenants: ['acme'],
        relay_key_ids: [],
        issued_at: '2026-01-01T00:00:00.000Z',
        expires_at: '2099-04-01T00:00:00.000Z',
        fetched_at: '2026-01-01T00:00:00.000Z',
      },
    ],
    inbox: async () => data.inbox,
    conversations: async () => data.conversations,
    read: async (agent, conversation) => {
      data.reads.push(`${agent}:${conversation}`);
      return data.inbox.filter((m) => m.conversation_id === conversation);
    },
    search: async (_a, q) => data.inbox.filter((m) => m.content.includes(q)),
    trust: async () => data.trust,
    profile: async () =>
      ({ presence: 'online', status_text: null, endpoint_url: null, webhook_secret_set: false }) as OwnProfile,
    events: async (): Promise<DaemonEventStream> => {
      if (!data.up) throw down();
      const queue: Array<DaemonEvent | null> = [];
      let wake: (() => void) | undefined;
      listeners.push((e) => {
        queue.push(e);
        wake?.();
      });
      async function* gen() {
        for (;;) {
          while (queue.length === 0) await new Promise<void>((r) => (wake = r));
          const e = queue.shift()!;
          if (e === null) return;
          yield e;
        }
      }
      return Object.assign(gen(), { close: () => queue.push(null) }) as unknown as DaemonEventStream;
    },
  };
  const emit = (e: DaemonEvent | null) => {
    for (const l of listeners) l(e);
  };
  return { source, data, emit, subscribed: () => listeners.length };
}

let ui: ReturnType<typeof render> | undefined;
afterEach(() => ui?.unmount());

/** Waits for a frame that satisfies `test` (renders are asynchronous); fails with the last frame. */
async function frame(test: (f: string) => boolean, what: string): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const f = ui!.lastFrame() ?? '';
    if (test(f)) return f;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`no frame with ${what}; last frame:\n${ui!.lastFrame()}`);
}

const press = async (keys: string) => {
  ui!.stdin.write(keys);
  await new Promise((r) => setImmediate(r));
};

describe('svc tui frames', () => {
  it('shows the agents with their relay session, the inbox, conversations, deployment and webhook', async () => {
    const { source } = fakeSource();
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    const f = await frame((f) => f.includes('hello bob'), 'the inbox message');
    expect(f).toContain('daemon 0.1.0 (pid 4242) · vault file-encrypted');
    expect(f).toMatch(/● bob\s+connected/);
    expect(f).toMatch(/carol\s+offline/);
    expect(f).toContain('Inbox · 1 unread');
    expect(f).toMatch(/01-01 12:01 alice hello bob, lunch at noon\?/);
    expect(f).toMatch(/alice \(1 new\) · 1 · 01-01 12:01/);
    expect(f).toContain('deployments: dev until 2099-04-01');
    expect(f).toContain('webhook: none');
    expect(f).toContain('presence: online');
    expect(f).toContain('q quit');
  });

  it('updates live when a message arrives', async () => {
    const { source, data, emit, subscribed } = fakeSource();
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('hello bob'), 'the first message');
    for (let i = 0; i < 200 && subscribed() === 0; i++) await new Promise((r) => setImmediate(r));
    const second = msg('m2', 'alice', 'the budget needs a vote', 2);
    data.inbox = [...data.inbox, second];
    emit({ type: 'message', agent: 'bob', message: second });
    const f = await frame((f) => f.includes('the budget needs a vote'), 'the new message');
    expect(f).toContain('Inbox · 2 unread');
  });

  it('leaves the inbox when it is acknowledged elsewhere (the CLI, MCP, the dashboard)', async () => {
    const { source, data, emit, subscribed } = fakeSource();
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('Inbox · 1 unread'), 'the unread message');
    for (let i = 0; i < 200 && subscribed() === 0; i++) await new Promise((r) => setImmediate(r));
    data.inbox = [];
    emit({ type: 'read', agent: 'bob', message_ids: ['m1'] });
    await frame((f) => !f.includes('Inbox · 1 unread') && f.includes('Inbox'), 'the inbox without it');
  });

  it("events are loaded one at a time, a burst as one more load; another agent's messages, a transfer's progress and a message do not ask the relay", async () => {
    const { source, data, emit, subscribed } = fakeSource();
    const calls = { inbox: 0, profile: 0, running: 0, most: 0 };
    let slow = false;
    const inbox = source.inbox;
    source.inbox = async (...args) => {
      calls.inbox++;
      calls.most = Math.max(calls.most, ++calls.running);
      if (slow) await new Promise((r) => setTimeout(r, 5));
      calls.running--;
      return inbox(...args);
    };
    const profile = source.profile;
    source.profile = (...args) => {
      calls.profile++;
      return profile(...args);
    };
    const settle = async () => {
      for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 5));
    };
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('hello bob'), 'the first message');
    for (let i = 0; i < 200 && subscribed() === 0; i++) await new Promise((r) => setImmediate(r));
    await settle();
    slow = true; // a load takes a while: events arrive while it is under way
    const start = { ...calls };
    // carol's messages and bob's transfer progress change nothing shown
    for (let i = 0; i < 10; i++) {
      emit({ type: 'message', agent: 'carol', message: msg(`c${i}`, 'dave', 'for carol', 3) });
      emit({ type: 'transfer', agent: 'bob', direction: 'download', name: 'f', done: i, total: 10 });
    }
    await settle();
    expect(calls.inbox).toBe(start.inbox);
    // twenty of bob's messages in a burst: one load under way, one more after it
    for (let i = 0; i < 20; i++) {
      const m = msg(`b${i}`, 'alice', `burst ${i}`, 10 + i);
      data.inbox = [...data.inbox, m];
      emit({ type: 'message', agent: 'bob', message: m });
      await new Promise((r) => setImmediate(r));
    }
    await settle();
    await frame((f) => f.includes('Inbox · 21 unread'), 'the burst');
    expect(calls.inbox - start.inbox).toBeLessThanOrEqual(3);
    expect(calls.most).toBe(1);
    expect(calls.profile).toBe(start.profile); // a message is no reason to ask the relay
    // a session event of the agent shown: its relay profile again
    emit({ type: 'session', agent: 'bob', state: 'connected' });
    await settle();
    expect(calls.profile).toBe(start.profile + 1);
  });

  it('with no agent, the webhook line says so (not that the relay does not answer, which nobody asked)', async () => {
    const { source, data } = fakeSource();
    data.status = { ...status, agents: [] };
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    const f = await frame((f) => f.includes('Agents (0)'), 'the dashboard');
    expect(f).toContain('none: svc register');
    expect(f).toContain('webhook: none (no agent: svc register)');
    expect(f).not.toContain('relay not reachable');
  });

  it('with no agent, a search says there is none to search as (Enter did nothing)', async () => {
    const { source, data } = fakeSource();
    data.status = { ...status, agents: [] };
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('Agents (0)'), 'the dashboard');
    await press('/');
    await press('hello');
    await press('\r');
    await frame((f) => f.includes('No agent to search as: register one with svc register'), 'the line that says so');
  });

  it('a message whose sender key changed is flagged, with a key warning and the command to check it', async () => {
    const { source, data } = fakeSource();
    data.inbox = [msg('m1', 'alice', 'trust me', 1, 'changed')];
    data.trust = {
      ...data.trust,
      peers: [
        {
          agent_number: 'alice',
          key_fingerprint: 'aa',
          pinned_at: 't',
          trust: 'changed',
          changed: { key_fingerprint: 'bb', seen_at: 't' },
          held: 2,
        },
      ],
    };
    ui = render(createElement(Dashboard, { source, size: { columns: 110, rows: 30 } }));
    const f = await frame((f) => f.includes('trust me'), 'the message');
    expect(f).toContain('alice [key changed] trust me');
    expect(f).toContain('⚠ alice changed its key (2 held): check with svc keys status --as bob');
  });

  it('an agent the relay refuses: red in the agent list, and a line that says what to do', async () => {
    const { source, data } = fakeSource();
    data.status = {
      ...status,
      agents: status.agents.map((a) => (a.name === 'bob' ? { ...a, session: 'refused' as const } : a)),
    };
    ui = render(createElement(Dashboard, { source, size: { columns: 110, rows: 30 } }));
    const f = await frame((f) => f.includes('hello bob'), 'the inbox');
    expect(f).toMatch(/● bob +refused/);
    expect(f).toContain(
      '⚠ the relay refuses bob (revoked?); if this persists: svc deregister --local bob, register anew',
    );
  });

  it('an agent whose relay does not answer: a red line that says why', async () => {
    const { source, data } = fakeSource();
    data.status = {
      ...status,
      agents: status.agents.map((a) =>
        a.name === 'bob'
          ? { ...a, session: 'connecting' as const, session_error: 'the relay does not answer (connect ECONNREFUSED)' }
          : a,
      ),
    };
    ui = render(createElement(Dashboard, { source, size: { columns: 110, rows: 30 } }));
    const f = await frame((f) => f.includes('hello bob'), 'the inbox');
    expect(f).toContain('⚠ bob connecting: the relay does not answer (connect ECONNREFUSED)');
  });

  it('--as takes an agent number too; an agent that is not here is said in a red line, not dropped', async () => {
    const { source, data } = fakeSource();
    data.status = {
      ...status,
      agents: status.agents.map((a) => (a.name === 'carol' ? { ...a, agent_number: '1002' } : a)),
    };
    ui = render(createElement(Dashboard, { source, agent: '1002', size: { columns: 110, rows: 30 } }));
    let f = await frame((f) => f.includes('presence: online'), 'the dashboard');
    expect(f).toMatch(/● carol\s+offline/);
    expect(f).not.toContain('no local agent');
    ui.unmount();
    ui = render(createElement(Dashboard, { source, agent: 'dave', size: { columns: 110, rows: 30 } }));
    f = await frame((f) => f.includes('hello bob'), 'the first agent');
    expect(f).toMatch(/● bob\s+connected/);
    expect(f).toContain('⚠ no local agent dave; showing bob (svc agent list names them)');
  });

  it('Tab moves between panes, j/k and arrows move, Enter opens a conversation, Esc goes back', async () => {
    const { source, data } = fakeSource();
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('hello bob'), 'the inbox');
    await press('\t'); // inbox → conversations
    await frame((f) => f.includes('▸ Conversations'), 'the conversations pane focused');
    await press('\r');
    let f = await frame((f) => f.includes('Conversation with alice'), 'the open conversation');
    expect(data.reads).toContain('bob:dm:alice:bob');
    expect(f).toContain('hello bob, lunch at noon?');
    await press('\u001b');
    f = await frame((f) => f.includes('Inbox ·'), 'back to the overview');
    await press('\t'); // conversations → agents
    await press('j');
    await press('\r'); // choose carol
    f = await frame((f) => /● carol/.test(f), 'carol chosen');
    expect(f).toMatch(/ {2}bob\s+connected/);
    await press('k');
    await press('\u001b[A'); // up arrow at the top stays there
    await press('\r');
    await frame((f) => /● bob/.test(f), 'bob chosen again');
  });

  it('a selection stays within a list that got shorter; the agents pane starts on the agent shown', async () => {
    const { source, data, emit, subscribed } = fakeSource();
    data.inbox = Array.from({ length: 5 }, (_, i) => msg(`m${i}`, 'alice', `note ${i}`, i));
    ui = render(createElement(Dashboard, { source, agent: 'carol', size: { columns: 100, rows: 30 } }));
    await frame((f) => /● carol/.test(f), 'carol shown');
    await press('\t');
    await press('\t'); // the agents, the cursor on carol: Enter keeps her
    await press('\r');
    await press('\t'); // the inbox
    let f = await frame((f) => f.includes('▸ Inbox'), 'the inbox focused');
    expect(f).toMatch(/● carol/);
    await press('jjjj');
    await frame((f) => f.includes('› 01-01 12:04 alice note 4'), 'the last message selected');
    for (let i = 0; i < 200 && subscribed() === 0; i++) await new Promise((r) => setImmediate(r));
    data.inbox = data.inbox.slice(0, 2); // three acknowledged elsewhere
    emit({ type: 'message', agent: 'carol', message: data.inbox[0]! });
    f = await frame((f) => f.includes('Inbox · 2 unread'), 'the shorter inbox');
    expect(f).toContain('› 01-01 12:01 alice note 1');
    await press('\r');
    await frame((f) => f.includes('Conversation with alice'), 'Enter opens the selected one');
  });

  it('a group goes by its name, a roster change reads as a sentence, an attachment by its name (never its key)', async () => {
    const { source, data } = fakeSource();
    const control = {
      ...msg('g1', 'carol', JSON.stringify({ op: 'create', kind: 'group', name: 'team' }), 2),
      conversation_id: 'grp:carol:x1',
      conversation_type: 'group',
      content_type: 'control',
      acked_at: '2026-01-01T12:02:30.000Z',
    } satisfies ArchivedMessage;
    const descriptor = attachmentDescriptor();
    const media = {
      ...msg('g2', 'carol', JSON.stringify(descriptor), 3),
      conversation_id: 'grp:carol:x1',
      conversation_type: 'group',
      content_type: 'media',
    } satisfies ArchivedMessage;
    data.inbox = [...data.inbox, media];
    data.conversations = [
      {
        conversation_id: 'grp:carol:x1',
        conversation_type: 'group',
        name: 'team',
        peer: null,
        last_message_at: media.sent_at,
        message_count: 2,
        unread: 1,
        last_message: media,
      },
      ...data.conversations,
    ];
    const read = source.read;
    source.read = async (agent, conversation, options) =>
      conversation === 'grp:carol:x1' ? [control, media] : read(agent, conversation, options);
    ui = render(createElement(Dashboard, { source, size: { columns: 120, rows: 30 } }));
    let f = await frame((f) => f.includes('team (1 new)'), 'the group by its name');
    expect(f).toContain('[file] plan.pdf (1204 bytes, application/pdf)');
    expect(f).not.toContain(descriptor.key);
    await press('\t'); // inbox → conversations
    await press('\r');
    f = await frame((f) => f.includes('Group team · 2'), 'the open group');
    expect(f).toContain('carol created the group “team”');
    expect(f).not.toContain('"op"');
  });

  it('/ searches the archive and shows what it found', async () => {
    const { source } = fakeSource();
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('hello bob'), 'the inbox');
    await press('/');
    for (const c of 'lunch') await press(c);
    await frame((f) => f.includes('search: lunch'), 'the query typed');
    await press('\r');
    const f = await frame((f) => f.includes('Search “lunch” · 1 found'), 'the results');
    expect(f).toContain('hello bob, lunch at noon?');
    await press('\u001b');
    await frame((f) => f.includes('Inbox ·'), 'back');
  });

  it('keys the terminal sent together are each a key: a pasted query and its Enter search, jjj moves three', async () => {
    const { source, data } = fakeSource();
    data.inbox = Array.from({ length: 6 }, (_, i) => msg(`m${i}`, 'alice', `note ${i} lunch`, i));
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 40 } }));
    await frame((f) => f.includes('note 5'), 'the inbox');
    await press('jjj'); // one chunk, as a held key or a fast typist sends it
    let f = await frame((f) => f.includes('› 01-01 12:03 alice note 3'), 'the fourth message selected');
    await press('/');
    await press('lunch\r'); // pasted with its line end
    f = await frame((f) => f.includes('Search “lunch” · 6 found'), 'the results');
    expect(f).not.toContain('search:');
    expect(f).not.toContain('\r');
    await press('\u001b');
    await press('/');
    await press('no\u0007te\t'); // a control character is no part of a query
    f = await frame((f) => f.includes('search: note'), 'the query typed');
    expect(f).toContain('search: note▏');
    expect(f).not.toContain('\u0007');
  });

  it('a daemon that is down is shown with the command that starts it, then picked up when it starts', async () => {
    const { source, data } = fakeSource();
    data.up = false;
    ui = render(createElement(Dashboard, { source, retryMs: 1, size: { columns: 100, rows: 30 } }));
    const f = await frame((f) => f.includes('not running'), 'the down screen');
    expect(f).toContain('The svc daemon is not running.');
    expect(f).toContain('Start it with:  svc start -b');
    expect(f).toContain('SVC_HOME /home/u/.svc');
    expect(f).not.toMatch(/at .*\.ts:\d+/); // no stack trace
    data.up = true;
    await frame((f) => f.includes('hello bob'), 'the dashboard once the daemon answers');
  });

  it('while the daemon is down, keys other than q do nothing (a / started a search that then took q as its text)', async () => {
    const { source, data } = fakeSource();
    data.up = false;
    ui = render(createElement(Dashboard, { source, retryMs: 1, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('not running'), 'the down screen');
    await press('/');
    await press('x');
    await press('\t');
    let f = await frame((f) => f.includes('not running'), 'the down screen still');
    expect(f).not.toContain('search:');
    expect(f.trimEnd().endsWith('q quit')).toBe(true);
    data.up = true;
    f = await frame((f) => f.includes('hello bob'), 'the dashboard once the daemon answers');
    expect(f).not.toContain('search:');
    expect(f).toContain('▸ Inbox'); // the Tab pressed while it was down moved nothing
  });

  it('starts from a snapshot asked for before it rendered, without asking the daemon again first', async () => {
    const { source, data } = fakeSource();
    const initial = loadSnapshot(source, undefined);
    await initial;
    data.inbox = []; // what a fresh load would show instead
    const statusAsked: number[] = [];
    let calls = 0;
    const counted: Source = {
      ...source,
      status: () => {
        calls++;
        return source.status();
      },
      events: (o) => {
        statusAsked.push(calls);
        return source.events(o);
      },
    };
    ui = render(createElement(Dashboard, { source: counted, initial, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('hello bob'), 'the message in the snapshot asked for first');
    await frame((f) => f.includes('No unread messages.'), 'the reload once subscribed');
    // subscribed to events before asking the daemon for anything itself
    expect(statusAsked[0]).toBe(0);
  });

  it('asks for the status and the deployments together', async () => {
    const { source } = fakeSource();
    const asked: string[] = [];
    let answer: (() => void) | undefined;
    const slow: Source = {
      ...source,
      status: () => {
        asked.push('status');
        return new Promise((r) => (answer = () => r(source.status())));
      },
      listDeployments: () => {
        asked.push('deployments');
        return source.listDeployments();
      },
    };
    const snapshot = loadSnapshot(slow);
    await new Promise((r) => setImmediate(r));
    expect(asked.sort()).toEqual(['deployments', 'status']); // the deployments asked before the status answered
    answer?.();
    expect(await snapshot).toMatchObject({ daemon: 'up', agent: 'bob' });
  });

  it('fits the terminal width it is given', async () => {
    const { source, data } = fakeSource();
    data.inbox = [msg('m1', 'alice', 'x'.repeat(300), 1)];
    ui = render(createElement(Dashboard, { source, size: { columns: 60, rows: 20 } }));
    const f = await frame((f) => f.includes('xxx'), 'the long message');
    for (const line of f.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
    expect(clip('abcdef', 4)).toBe('abc…');
  });

  it('in a conversation j/k move between its messages and Enter shows one whole; Esc goes back step by step', async () => {
    const { source, data } = fakeSource();
    const long = `${'a long report line. '.repeat(30)}THE-END`;
    data.inbox = [
      msg('m1', 'alice', 'hello bob, lunch at noon?', 1),
      msg('m2', 'alice', long, 2),
      msg('m3', 'alice', 'third and newest', 3),
    ];
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('hello bob'), 'the inbox');
    await press('\t'); // inbox → conversations
    await frame((f) => f.includes('▸ Conversations'), 'the conversations pane focused');
    await press('\r');
    await frame((f) => f.includes('Conversation with alice · 3 · 3/3'), 'the conversation, on its newest message');
    await press('k');
    let f = await frame((f) => f.includes('· 2/3'), 'the selection on the long message');
    expect(f).not.toContain('THE-END'); // a list line is cut
    await press('\r');
    f = await frame((f) => f.includes('(Esc back)') && f.includes('from alice · key pinned'), 'the whole message');
    expect(f).toContain('id m2');
    expect(f).toContain('THE-END');
    await press('\u001b');
    await frame((f) => f.includes('· 2/3'), 'back in the conversation');
    await press('\u001b');
    await frame((f) => f.includes('Inbox · 3 unread'), 'back to the overview');
  });

  it('Enter on an inbox message opens its conversation on that message (it opened on the newest)', async () => {
    const { source, data } = fakeSource();
    data.inbox = [msg('m1', 'alice', 'first', 1), msg('m2', 'alice', 'second', 2), msg('m3', 'alice', 'third', 3)];
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('Inbox · 3 unread'), 'the inbox');
    await press('j'); // the inbox is focused first: on m2
    await press('\r');
    await frame((f) => f.includes('Conversation with alice · 3 · 2/3'), 'the conversation, on the message chosen');
    await press('\r');
    await frame((f) => f.includes('id m2'), 'that message read whole');
  });

  it('a message read whole shows its key fingerprint and id whole on a narrow terminal; a group message is to the group', async () => {
    const { source, data } = fakeSource();
    const fingerprint = '3e3e:8858:f8bd:653b:c0e5:bd53:0363:9a1c:77d0:4e2f:aa01:b2c3:d4e5:f607:1829:3a4b';
    const id = '01a229f8-5f4a-779f-9010-b2ba5e6c7d8e';
    data.inbox = [
      {
        ...msg(id, 'alice', 'to the group', 1),
        conversation_id: 'grp:alice:worCuT5PjZU5XOtWujIfNw',
        conversation_type: 'group',
        verified: { sender: 'alice', key_fingerprint: fingerprint, trust: 'pinned' },
      },
    ];
    ui = render(createElement(Dashboard, { source, size: { columns: 60, rows: 30 } }));
    await frame((f) => f.includes('Inbox · 1 unread'), 'the inbox');
    await press('\r');
    await frame((f) => f.includes('(Esc back)'), 'the conversation');
    await press('\r');
    const f = await frame((f) => f.includes('Message'), 'the message read whole');
    // the panes' borders and the other pane taken off each line, what is left reads whole
    const text = f
      .split('\n')
      .map((l) => l.split(/[║│]/).at(-2) ?? '')
      .join('')
      .replace(/\s+/g, '');
    expect(text).toContain(fingerprint);
    expect(text).toContain(`id${id}`);
    expect(text).toContain('togrp:alice:worCuT5PjZU5XOtWujIfNw');
  });

  it('Esc Esc in one read goes back two steps; the agents pane is not drawn focused under search results', async () => {
    const { source, data } = fakeSource();
    data.inbox = [msg('m1', 'alice', 'first', 1), msg('m2', 'alice', 'second', 2)];
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('Inbox · 2 unread'), 'the inbox');
    await press('\r');
    await frame((f) => f.includes('Conversation with alice'), 'the conversation');
    await press('\r');
    await frame((f) => f.includes('(Esc back)') && f.includes('▸ Message'), 'the message read whole');
    await press('\u001b\u001b');
    await frame((f) => f.includes('Inbox · 2 unread'), 'back to the overview in one read');
    await press('\t');
    await press('\t'); // the agents pane
    await frame((f) => f.includes('▸ Agents'), 'the agents pane focused');
    await press('/');
    await press('first');
    await press('\r');
    const f = await frame((f) => f.includes('▸ Search'), 'the results');
    expect(f).not.toContain('▸ Agents');
  });

  it('a narrow message line keeps room for its text: the time without the date, a long sender cut', async () => {
    // the right pane's inside at 60 columns is 32: date, time and sender left the text 3
    const m = msg('m1', 'agent-21e6a2-with-a-long-number', 'hello bob, lunch at noon?', 1);
    ui = render(createElement(MessageLine, { m, width: 32, selected: false }));
    expect(ui.lastFrame()).toBe('  12:01 agent-21e6a… hello bob…');
    ui.rerender(createElement(MessageLine, { m, width: 80, selected: false }));
    expect(ui.lastFrame()).toBe('  01-01 12:01 agent-21e6a2-with-a-long-number hello bob, lunch at noon?');
  });

  it('a conversation longer than one read says how long it is, and its older messages are read as the selection goes above them', async () => {
    const { source, data, emit, subscribed } = fakeSource();
    const all = Array.from({ length: 450 }, (_, i) => msg(`m${i}`, 'alice', `note ${i}`, 0, 'pinned'));
    data.inbox = all;
    data.conversations = [{ ...data.conversations[0]!, message_count: 450, unread: 450, last_message: all[449]! }];
    const asked: number[] = [];
    source.read = async (_agent, _conversation, options) => {
      asked.push(options?.last ?? 0);
      return all.slice(-(options?.last ?? all.length));
    };
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('Inbox · 450 unread'), 'the inbox');
    await press('\t');
    await press('\r');
    let f = await frame((f) => f.includes('Conversation with alice'), 'the conversation');
    expect(f).toContain('Conversation with alice · 450 · 450/450');
    expect(asked).toEqual([200]);
    await press('k'.repeat(199)); // the first of the 200 read
    f = await frame((f) => f.includes('· 251/450'), 'the oldest message read');
    expect(f).toMatch(/› .* note 250\b/);
    await press('k'); // above it: the older ones are read, and the one above selected
    f = await frame((f) => f.includes('· 250/450'), 'the message above');
    expect(f).toMatch(/› .* note 249\b/);
    expect(asked).toEqual([200, 400]);
    // a new message: the same one stays selected, the older ones read stay read
    for (let i = 0; i < 200 && subscribed() === 0; i++) await new Promise((r) => setImmediate(r));
    all.push(msg('m450', 'alice', 'note 450', 0));
    data.conversations = [{ ...data.conversations[0]!, message_count: 451 }];
    emit({ type: 'message', agent: 'bob', message: all[450]! });
    f = await frame((f) => f.includes('· 250/451'), 'the new message counted');
    expect(f).toMatch(/› .* note 249\b/);
    expect(asked.at(-1)).toBe(400);
    // not known how many (not among the conversations listed): the title says there may be more
    await press('\u001b');
    for (let i = 0; i < 200 && subscribed() === 0; i++) await new Promise((r) => setImmediate(r));
    data.conversations = [];
    emit({ type: 'message', agent: 'bob', message: all[450]! });
    await frame((f) => f.includes('No conversations yet.'), 'the conversations gone');
    await press('\t');
    await press('\t'); // the inbox
    await press('\r');
    await frame((f) => f.includes('· 200+ · 200/200+'), 'a conversation of unknown length');
  });

  it("a peer's terminal escapes are shown as text, in the list and in the whole message", async () => {
    const { source, data } = fakeSource();
    // clear the screen, write the clipboard (OSC 52), return to the line's start and overwrite it
    data.inbox = [msg('m1', 'alice', 'pay\u001b[2J\u001b]52;c;cm0gLXJm\u0007\rnothing\nsecond line', 1)];
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    let f = await frame((f) => f.includes('pay\\x1b[2J'), 'the message in the inbox');
    await press('\t');
    await frame((f) => f.includes('▸ Conversations'), 'the conversations pane focused');
    await press('\r');
    await frame((f) => f.includes('Conversation with alice'), 'the conversation');
    await press('\r');
    f = await frame((f) => f.includes('(Esc back)') && f.includes('second line'), 'the whole message');
    expect(f).toContain('pay\\x1b[2J\\x1b]52;c;cm0gLXJm\\x07\\x0dnothing');
    for (const c of ['\u001b[2J', '\u001b]52', '\u0007', '\r']) expect(f).not.toContain(c);
  });

  it('Enter on a search result shows it whole', async () => {
    const { source, data } = fakeSource();
    data.inbox = [msg('m1', 'alice', 'lunch first', 1), msg('m2', 'alice', `lunch ${'x '.repeat(200)}LAST-WORD`, 2)];
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    await frame((f) => f.includes('lunch first'), 'the inbox');
    await press('/');
    for (const c of 'lunch') await press(c);
    await press('\r');
    await frame((f) => f.includes('2 found · 1/2'), 'the results');
    await press('j');
    await frame((f) => f.includes('2 found · 2/2'), 'the second result selected');
    await press('\r');
    const f = await frame((f) => f.includes('id m2'), 'the second result whole');
    expect(f).toContain('LAST-WORD');
  });

  it('PgDn and PgUp move a page of the list shown, End and Home to its last and first; in a message read whole they scroll it', async () => {
    const { source, data } = fakeSource();
    const long = Array.from({ length: 60 }, (_, i) => `line ${i}`).join('\n');
    data.inbox = [
      ...Array.from({ length: 40 }, (_, i) => msg(`m${i}`, 'alice', `note ${i}`, i)),
      msg('mx', 'alice', long, 50),
    ];
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 20 } }));
    // 20 rows: 8 of the inbox shown (see the layout); a page moves 7, keeping one in view
    await frame((f) => f.includes('Inbox · 41 unread · 1–8 of 41'), 'the inbox');
    await press('\u001b[6~'); // PgDn
    let f = await frame((f) => f.includes('› 01-01 12:07 alice note 7'), 'a page down');
    await press('\u001b[F'); // End
    f = await frame((f) => f.includes('Inbox · 41 unread · 34–41 of 41'), 'the last');
    expect(f).toMatch(/› 01-01 12:50 alice line 0/);
    await press('\u001b[5~'); // PgUp
    await frame((f) => f.includes('› 01-01 12:33 alice note 33'), 'a page up');
    await press('\u001b[H'); // Home
    await frame(
      (f) => f.includes('Inbox · 41 unread · 1–8 of 41') && f.includes('› 01-01 12:00 alice note 0'),
      'the first',
    );
    // the conversation, on its newest: the long message whole, End at its last line, Home at its first
    await press('\t');
    await press('\r');
    await frame((f) => f.includes('· 41/41'), 'the conversation');
    await press('\r');
    f = await frame((f) => f.includes('id mx'), 'the message whole');
    expect(f).toMatch(/lines 1-\d+ of 60/);
    await press('\u001b[F');
    f = await frame((f) => /lines \d+-60 of 60/.test(f), 'its end');
    expect(f).toContain('line 59');
    await press('k'); // one line up from the end, not from a line past it
    f = await frame((f) => !f.includes('line 59'), 'one line up');
    await press('\u001b[H');
    f = await frame((f) => /lines 1-\d+ of 60/.test(f), 'its start');
  });

  it('the keys line names every key that fits, and q quit at any width', () => {
    for (const mode of ['overview', 'list', 'message', 'down'] as const) {
      for (const columns of [120, 80, 60, 40, 30]) {
        const line = keysLine(mode, columns);
        expect(line.length, `${mode} ${columns}`).toBeLessThanOrEqual(columns);
        expect(line, `${mode} ${columns}`).toContain('q quit');
      }
    }
    expect(keysLine('overview', 80)).toBe('Tab pane · ↑↓/j k move · Enter open · Esc back · / search · q quit');
    expect(keysLine('overview', 120)).toBe(
      'Tab pane · ↑↓/j k move · PgUp PgDn Home End · Enter open · Esc back · / search · q quit',
    );
    expect(keysLine('overview', 60)).toContain('Enter open');
    // a stopped daemon takes no key but q
    expect(keysLine('down', 80)).toBe('q quit');
  });

  it('wraps a message to the width, at spaces, keeping its line breaks', () => {
    expect(wrapLines('one two three four', 9)).toEqual(['one two', 'three', 'four']);
    expect(wrapLines('x'.repeat(12), 5)).toEqual(['xxxxx', 'xxxxx', 'xx']);
    expect(wrapLines('a\n\nb\tc', 10)).toEqual(['a', '', 'b  c']);
    // wide characters take two columns
    expect(wrapLines('漢字テスト', 4)).toEqual(['漢字', 'テス', 'ト']);
  });

  it('measures what the user sees: an emoji sequence, a flag or an accented letter is one character, never split', () => {
    const coder = '👩‍💻'; // woman, ZWJ, laptop: 2 columns
    const family = '👨‍👩‍👧'; // three emoji joined: 2 columns
    const flag = '🇫🇷'; // two regional indicators: 2 columns
    const accented = 'e\u0301'; // e and a combining acute: 1 column
    expect(columns(coder)).toBe(2);
    expect(columns(family)).toBe(2);
    expect(columns(`${flag}${accented}`)).toBe(3);
    expect(wrapLines(`${coder}${family}${flag}`, 4)).toEqual([`${coder}${family}`, flag]);
    expect(wrapLines(`${accented.repeat(3)} ok`, 3)).toEqual([accented.repeat(3), 'ok']);
    expect(wrapLines('ab漢', 3)).toEqual(['ab', '漢']);
    // clipped to its columns (UTF-16 units made a line of CJK twice too wide), never inside a sequence
    expect(clip('漢字テスト', 5)).toBe('漢字…');
    expect(columns(clip('漢字テスト', 5))).toBeLessThanOrEqual(5);
    expect(clip(`${family}${family}${family}`, 5)).toBe(`${family}${family}…`);
    expect(clip(`${coder} done`, 7)).toBe(`${coder} done`);
  });

  it('long text is measured and cut the same, a window at a time, never inside a sequence that crosses a window', () => {
    const family = '👨‍👩‍👧'; // 8 code units: 1024-unit windows end inside one again and again
    const text = `x${family.repeat(3000)}`;
    expect(columns(text)).toBe(1 + 2 * 3000);
    const lines = wrapLines(text, 10);
    // every line whole sequences: 'x' and four of them, then five to a line
    expect(lines[0]).toBe(`x${family.repeat(4)}`);
    expect(lines.slice(1, -1).every((l) => l === family.repeat(5))).toBe(true);
    expect(lines.join('')).toBe(text);
    expect(clip(text, 9)).toBe(`x${family.repeat(3)}…`);
  });

  it('a message of 190,000 wide characters is measured, wrapped and clipped (whole, it froze the terminal UI)', () => {
    // Intl.Segmenter over the whole string took minutes here; a window at a time, milliseconds
    const text = '漢'.repeat(190_000);
    expect(columns(text)).toBe(380_000);
    const lines = wrapLines(text, 96);
    expect(lines).toHaveLength(Math.ceil(190_000 / 48));
    expect(lines[0]).toBe('漢'.repeat(48));
    expect(clip(text, 11)).toBe(`${'漢'.repeat(5)}…`);
  }, 60_000);
});

describe('a small terminal', () => {
  it('a terminal below the least size gets one line saying what it needs, within its rows; a larger one the frame', async () => {
    const { source } = fakeSource();
    // (the test terminal is 100 columns wide whatever the size given: rows alone here; a
    // real terminal's columns in e2e/test/tui-tmux.test.ts)
    for (const [columns, rows] of [
      [100, 12],
      [100, 6],
      [100, 2],
    ] as const) {
      ui = render(createElement(Dashboard, { source, size: { columns, rows } }));
      const f = await frame((f) => f.includes('make it larger'), `the size line at ${columns}×${rows}`);
      expect(f).toContain(
        `svc tui needs at least 40×13; this terminal is ${columns}×${rows}: make it larger (q quits).`,
      );
      // one line where the terminal is as wide as the usual 80 columns
      expect(f.split('\n').filter((l) => l.trim() !== '')).toHaveLength(1);
      expect(f.split('\n').length).toBeLessThanOrEqual(rows);
      ui.unmount();
    }
    for (const [columns, rows] of [
      [100, 13],
      [100, 30],
    ] as const) {
      ui = render(createElement(Dashboard, { source, size: { columns, rows } }));
      const f = await frame((f) => f.includes('Inbox · 1 unread'), `the frame at ${columns}×${rows}`);
      expect(f).not.toContain('make it larger');
      expect(f.split('\n').length).toBeLessThanOrEqual(rows);
      ui.unmount();
    }
    ui = undefined;
  });

  it('a list that does not fit says which part of it is shown', async () => {
    const { source, data } = fakeSource();
    data.inbox = Array.from({ length: 9 }, (_, i) => msg(`m${i}`, 'alice', `note ${i}`, i));
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 16 } }));
    const f = await frame((f) => /Inbox · 9 unread · 1–\d of 9/.test(f), 'the part of the inbox shown');
    expect(f).toContain('note 0');
    expect(f).not.toContain('note 8');
    ui.unmount();
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 60 } }));
    const all = await frame((f) => f.includes('note 8'), 'the whole inbox');
    expect(all).toContain('Inbox · 9 unread');
    expect(all).not.toContain('of 9');
  });

  it('the rows a list does not need go to the other; many agents scroll in their pane; an open list takes the whole height', async () => {
    const { source, data } = fakeSource();
    data.inbox = Array.from({ length: 30 }, (_, i) => msg(`m${i}`, 'alice', `note ${i}`, i));
    data.status = {
      ...status,
      agents: Array.from({ length: 20 }, (_, i) => ({
        name: `agent${String(i).padStart(2, '0')}`,
        agent_number: `n${i}`,
        deployment: 'dev',
        session: 'connected' as const,
      })),
    };
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 20 } }));
    // 20 rows: 15 for the panels, 6 of them borders and titles, one conversation: 8 for the inbox
    let f = await frame((f) => f.includes('Inbox · 30 unread'), 'the inbox');
    expect(f).toContain('Inbox · 30 unread · 1–8 of 30');
    expect(f.split('\n').length).toBeLessThanOrEqual(20);
    // twenty agents in 15 rows (borders, title and presence line take 4): 11
    expect(f).toContain('Agents (20) · 1–11');
    expect(f).not.toContain('agent11');
    await press('\t');
    await press('\t'); // the agents
    await press('j'.repeat(19));
    f = await frame((f) => f.includes('Agents (20) · 10–20'), 'the last agent in view');
    expect(f).toMatch(/agent19/);
    expect(f.split('\n').length).toBeLessThanOrEqual(20);
    // an open conversation: 12 rows of messages under its title (opened from the inbox on
    // its first message; End goes to the newest)
    await press('\t');
    await press('\r');
    f = await frame((f) => f.includes('Conversation with alice · 30 · 1/30'), 'the conversation');
    expect(f).toContain('note 11');
    expect(f).not.toContain('note 12');
    await press('\u001b[F');
    f = await frame((f) => f.includes('· 30 · 30/30'), 'its newest message');
    expect(f).toContain('note 18');
    expect(f).not.toContain('note 17');
    expect(f.split('\n').length).toBeLessThanOrEqual(20);
  });

  it('keys do nothing unseen while it is too small (a / would start a search that took q as its text)', async () => {
    const { source } = fakeSource();
    ui = render(createElement(Dashboard, { source, size: { columns: 100, rows: 6 } }));
    await frame((f) => f.includes('make it larger'), 'the size line');
    await press('/');
    await press('x');
    ui.rerender(createElement(Dashboard, { source, size: { columns: 100, rows: 30 } }));
    const f = await frame((f) => f.includes('Inbox · 1 unread'), 'the frame once it is larger');
    expect(f).not.toContain('search:');
    expect(f).toContain('q quit');
  });
});
