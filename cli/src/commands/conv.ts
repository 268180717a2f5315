/**
 * conv …: conversations, groups and broadcasts. Rosters are client-side: the daemon
 * derives them from signed, encrypted control messages, and the relay sees only sealed
 * envelopes (docs/conversations.md).
 */
import type { ArchivedMessage, ConversationInfo, ConversationSummary } from '@svc/daemon/client';
import { Command, InvalidArgumentError } from 'commander';
import type { App, Run } from '../app.js';
import { usageError } from '../errors.js';
import { action, choice, common, intParser, isoTimeParser } from '../options.js';
import { keyValues, table } from '../output.js';
import { messagesTable } from '../render.js';

const AGENT_NUMBER = /^[A-Za-z0-9_-]{1,128}$/;

/** Agent numbers given as separate words or comma-separated. */
function numbers(values: string[] | undefined, flag: string): string[] {
  const all = (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  const bad = all.find((n) => !AGENT_NUMBER.test(n));
  if (bad !== undefined) throw usageError(`${flag}: ${JSON.stringify(bad)} is not an agent number.`);
  return all;
}

export function conversationText(c: ConversationInfo): string {
  return (
    keyValues([
      ['conversation', c.conversation_id],
      ['type', c.conversation_type],
      ['name', c.name],
      ['description', c.description],
      ['creator', c.creator],
      ['you', c.me ? `${c.me.role}${c.me.active ? '' : ' (left)'}` : undefined],
    ]) +
    (c.members
      ? table(
          [
            ['member', 'number'],
            ['role', 'role'],
            ['status', 'status'],
          ],
          c.members.map((m) => ({ ...m, status: m.active ? 'active' : 'left' })),
          'No members.',
        )
      : '')
  );
}

function listText(list: readonly ConversationSummary[]): string {
  return table(
    [
      ['conversation', 'conversation_id'],
      ['type', 'conversation_type'],
      ['name', 'label'],
      ['messages', 'message_count'],
      ['last', 'last_message_at'],
    ],
    list.map((c) => ({
      ...c,
      label: c.name ?? c.peer,
      conversation_type: c.me && !c.me.active ? `${c.conversation_type} (left)` : c.conversation_type,
    })),
    'No conversations.',
  );
}

/** From the start of a conversation: earlier than any message's sort key. */
const FIRST_PAGE = '1970-01-01';

/**
 * A --since cursor: a message's sort key (sent time `~` message id) as printed, or an
 * ISO-8601 timestamp, taken as the instant in the sort key's form, so it sorts before the
 * messages sent at or after it.
 */
export function sortKeyParser(raw: string): string {
  const tilde = raw.indexOf('~');
  const time = tilde === -1 ? raw : raw.slice(0, tilde);
  const id = tilde === -1 ? undefined : raw.slice(tilde + 1);
  try {
    isoTimeParser(time);
  } catch {
    throw new InvalidArgumentError(
      "expected a message's SORT_KEY (as `svc conv messages --json` prints it) or an ISO-8601 timestamp such as 2025-01-31T12:00:00Z.",
    );
  }
  if (id === undefined) return new Date(time).toISOString();
  if (id === '' || raw.length > 512) throw new InvalidArgumentError('the message id after ~ is missing or too long.');
  return raw;
}

/**
 * Where the next page is. Without --since the page is the latest messages, so the next one
 * after it is always empty: the way on is from the first message. With --since, a full page
 * may have more after its last message.
 */
function pagingHint(page: readonly ArchivedMessage[], limit: number, since: string | undefined): string {
  const last = page.at(-1)?.sort_key;
  if (page.length < limit || last === undefined) return '';
  if (since === undefined) {
    return `These are the latest ${limit}; to page from the first message: --since ${FIRST_PAGE}\n`;
  }
  return `next page: --since '${last}'\n`;
}

export function convCommand(app: App): Command {
  const listAction = async (run: Run) => {
    const o = run.opts<{ limit: number }>();
    const { link, agent } = await run.asAgent();
    const list = await link.conversations(agent, { limit: o.limit });
    run.print(list, () => listText(list));
  };
  const conv = common(
    new Command('conv')
      .description('conversations (also: conv list)')
      .option('--limit <n>', 'at most this many', intParser(1, 1000, '--limit'), 20),
  );
  action(app, conv, listAction);

  const list = common(
    new Command('list')
      .description('conversations, most recent first')
      .option('--limit <n>', 'at most this many', intParser(1, 1000, '--limit'), 20),
  );
  action(app, list, listAction);

  /** create-broadcast and create-group differ in their kind and the members' flag only. */
  const create = (kind: 'broadcast' | 'group', description: string, flag: 'subscribers' | 'participants') => {
    const cmd = common(
      new Command(`create-${kind}`)
        .description(description)
        .argument('<name>', 'name')
        .option('-d, --description <text>', 'description')
        .option(`-${flag[0]}, --${flag} <agent_numbers...>`, `${flag.slice(0, -1)} agent numbers`),
    );
    action(app, cmd, async (run, name?: string) => {
      const o = run.opts<{ description?: string } & Partial<Record<typeof flag, string[]>>>();
      const { link, agent } = await run.asAgent();
      const c = await link.createConversation(agent, {
        kind,
        name: name!,
        ...(o.description !== undefined ? { description: o.description } : {}),
        members: numbers(o[flag], `--${flag}`),
      });
      run.print(c, () => `Created ${kind} ${c.conversation_id}.\n${conversationText(c)}`);
    });
    return cmd;
  };
  const createBroadcast = create(
    'broadcast',
    'create a broadcast (its subscribers receive; their replies reach you only)',
    'subscribers',
  );
  const createGroup = create('group', 'create a group (every member reads and posts; observers read)', 'participants');

  const invite = common(
    new Command('invite')
      .description('invite an agent (the creator only)')
      .argument('<conversation_id>', 'conversation')
      .option('--agent <agent_number>', 'agent number to invite (required, or as -e)')
      // the specification's name for it, kept so that command lines written to it still work
      .option('-e, --el-number <agent_number>', 'same as --agent')
      .addOption(choice('-r, --role <role>', 'role', ['member', 'observer'], 'member')),
  );
  action(app, invite, async (run, id?: string) => {
    const o = run.opts<{ agent?: string; elNumber?: string; role: 'member' | 'observer' }>();
    if (o.agent !== undefined && o.elNumber !== undefined && o.agent !== o.elNumber) {
      throw usageError('--agent and --el-number differ; give one.');
    }
    const flag = o.agent !== undefined ? '--agent' : '--el-number';
    const [number, more] = numbers([o.agent ?? o.elNumber ?? ''], flag);
    if (number === undefined) throw usageError('Give the agent to invite: --agent AGENT_NUMBER.');
    if (more !== undefined) throw usageError(`${flag}: invite one agent at a time.`);
    const { link, agent } = await run.asAgent();
    const c = await link.invite(agent, id!, { number, role: o.role });
    run.print(c, () => `Invited ${number} as ${o.role}.\n${conversationText(c)}`);
  });

  const leave = common(
    new Command('leave').description('leave a group or broadcast').argument('<conversation_id>', 'conversation'),
  );
  action(app, leave, async (run, id?: string) => {
    const { link, agent } = await run.asAgent();
    const c = await link.leave(agent, id!);
    run.print(c, () => `Left ${c.conversation_id}; nothing more reaches you there.\n`);
  });

  const messages = common(
    new Command('messages')
      .description('messages of a conversation, in sort-key order: the latest page, or the page after --since')
      .argument('<conversation_id>', 'conversation id (or agent number of a direct peer)')
      .option('--limit <n>', 'at most this many', intParser(1, 1000, '--limit'), 50)
      .option(
        '--since <cursor>',
        'only messages after this SORT_KEY (of a message) or ISO-8601 timestamp',
        sortKeyParser,
      ),
  );
  action(app, messages, async (run, id?: string) => {
    const o = run.opts<{ limit: number; since?: string }>();
    const { link, agent } = await run.asAgent();
    const page = await link.conversationMessages(agent, id!, {
      limit: o.limit,
      ...(o.since ? { since: o.since } : {}),
    });
    run.print(page, () => messagesTable(page) + pagingHint(page, o.limit, o.since));
  });

  const search = common(
    new Command('search')
      .description('search the messages of every conversation by participant, time and type')
      .option('--participant <agent_number>', 'sender or recipient')
      .option('--after <time>', 'after this ISO-8601 time', isoTimeParser)
      .option('--before <time>', 'before this ISO-8601 time', isoTimeParser)
      .addOption(choice('--type <type>', 'content type', ['text', 'media', 'structured']))
      .addOption(choice('--sort <order>', 'order', ['recent', 'oldest'], 'recent'))
      .option('--limit <n>', 'at most this many (up to 100)', intParser(1, 100, '--limit'), 20)
      .option('--offset <n>', 'skip this many (up to 10000)', intParser(0, 10_000, '--offset'), 0),
  );
  action(app, search, async (run) => {
    const o = run.opts<{
      participant?: string;
      after?: string;
      before?: string;
      type?: 'text' | 'media' | 'structured';
      sort: 'recent' | 'oldest';
      limit: number;
      offset: number;
    }>();
    if (o.participant !== undefined) numbers([o.participant], '--participant');
    if (o.after !== undefined && o.before !== undefined && Date.parse(o.after) >= Date.parse(o.before)) {
      throw usageError('--after must be earlier than --before.');
    }
    const { link, agent } = await run.asAgent();
    const found = await link.searchConversations(agent, {
      ...(o.participant !== undefined ? { participant: o.participant } : {}),
      ...(o.after !== undefined ? { after: o.after } : {}),
      ...(o.before !== undefined ? { before: o.before } : {}),
      ...(o.type !== undefined ? { type: o.type } : {}),
      sort: o.sort,
      limit: o.limit,
      offset: o.offset,
    });
    run.print(found, () => messagesTable(found, 'Nothing found.'));
  });

  for (const c of [list, createBroadcast, createGroup, invite, leave, messages, search]) conv.addCommand(c);
  return conv;
}
