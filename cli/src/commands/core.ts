/** Core: init, register, send, reply, inbox, read, watch, mcp. */
import { statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { ContentType, RegisterInput, SavedAttachment } from '@svc/daemon/client';
import { ENROLLMENT_CODE_PREFIX, EnrollmentCodeFormatError, parseEnrollmentCode } from '@svc/shared';
import { Command } from 'commander';
import type { App, Run } from '../app.js';
import { savedText } from '../attachment.js';
import { DEFAULT_PROFILE, getSetting, setSetting } from '../config-file.js';
import { eventsUntil } from '../daemon-link.js';
import { CliError, usageError } from '../errors.js';
import { action, choice, common, intParser, isoTimeParser, withAs, withJson, withVerbose } from '../options.js';
import { jsonLine, keyValues, warn } from '../output.js';
import { withProgress } from '../progress.js';
import { agentText, messageLine, messagesTable, sentText } from '../render.js';
import { mcpCommand } from './mcp.js';

export const CONTENT_TYPES = ['text', 'structured', 'media'] as const;
export const INBOX_SOURCES = ['auto', 'local', 'api'] as const;

/**
 * A value that cannot be an enrollment code is a usage error found here (exit 2), whether
 * or not it starts with the prefix; the daemon checks its signature and bindings later.
 */
function checkEnrollmentCode(code: string): void {
  try {
    parseEnrollmentCode(code);
  } catch (err) {
    if (!(err instanceof EnrollmentCodeFormatError)) throw err;
    throw usageError(`--enrollment-grant: ${err.message}; copy the whole code the relay operator gave you.`);
  }
}

/** TO_NUMBER naming an @space path: spaces are hosted-only. */
function refuseSpacePath(to: string | undefined): void {
  if (to?.startsWith('@')) {
    throw new CliError(
      'not_supported_self_hosted',
      `${to} is a space path; spaces are a hosted-service feature that a self-hosted deployment does not offer.`,
    );
  }
}

/**
 * The file of `--file`, which must exist; `--content-type media` names an attachment, and
 * text typed on the command line is not one.
 */
function checkedFile(type: ContentType, file: string | undefined): string | undefined {
  if (type === 'media' && file === undefined) {
    throw usageError('--content-type media is for attachments (--file PATH); send text with --content-type text.');
  }
  const stat = file === undefined ? undefined : statSync(file, { throwIfNoEntry: false });
  if (file !== undefined && !stat?.isFile()) {
    throw usageError(stat?.isDirectory() ? `--file: ${file} is a directory; name a file.` : `--file: no file ${file}.`);
  }
  return file;
}

async function contentFrom(
  run: Run,
  sources: { positional?: string; message?: string; stdin?: boolean; file?: string; accepted: string },
): Promise<string> {
  const given = [
    sources.positional !== undefined && 'CONTENT',
    sources.message !== undefined && '--message',
    sources.stdin === true && '--stdin',
    sources.file !== undefined && '--file',
  ].filter((s): s is string => typeof s === 'string');
  if (given.length === 0) throw usageError(`Give the message content: ${sources.accepted}.`);
  // with a file, CONTENT or --message is its caption
  const captioned = sources.file !== undefined && given.length === 2 && !given.includes('--stdin');
  if (given.length > 1 && !captioned) throw usageError(`Give the content once; got ${given.join(' and ')}.`);
  if (sources.file !== undefined) return sources.positional ?? sources.message ?? '';
  if (sources.stdin) {
    const text = await run.readStdin();
    if (text.trim() === '') throw usageError('Standard input was empty; nothing to send.');
    return text.endsWith('\n') ? text.slice(0, -1) : text;
  }
  const text = (sources.positional ?? sources.message)!;
  if (text.trim() === '') throw usageError('The message is empty; give some content.');
  return text;
}

export function coreCommands(app: App): Command[] {
  const init = withVerbose(
    new Command('init')
      .description('set up $SVC_HOME, remember the default agent name, and start the local daemon')
      .option('--name <name>', 'default agent name for registration (prompted if omitted)')
      .option('--description <text>', 'default agent description')
      .option('--skip-start', 'do not start the local daemon', false)
      .option('--deployment <name>', 'default deployment for registration'),
  );
  action(app, init, async (run) => {
    const o = run.opts<{ name?: string; description?: string; skipStart: boolean; deployment?: string }>();
    await mkdir(app.home, { recursive: true, mode: 0o700 });
    const name = o.name ?? (await run.prompt('Agent name (empty for none): ')) ?? '';
    const settings: Array<['name' | 'description' | 'deployment', string | undefined]> = [
      ['name', name || undefined],
      ['description', o.description],
      ['deployment', o.deployment],
    ];
    for (const [key, value] of settings)
      if (value !== undefined) await setSetting(app.home, DEFAULT_PROFILE, key, value);
    run.info(`home ${app.home}`);
    let daemon = 'not started (--skip-start)';
    if (!o.skipStart) {
      const status = await (await run.link()).status();
      daemon = `running (pid ${status.pid}, version ${status.version})`;
    }
    run.out(
      keyValues([
        ['home', app.home],
        ['name', name || undefined],
        ['deployment', o.deployment],
        ['daemon', daemon],
      ]) +
        'Next: add the deployment (svc deployment fetch --url URL --trust FILE) and register ' +
        '(svc register --enrollment-grant CODE).\n',
    );
  });

  const register = withVerbose(
    withJson(
      new Command('register')
        .description('enroll a new agent with an operator enrollment code and keep its identity in the vault')
        .option('--name <name>', 'agent name (local name and display name)')
        .option('--display-name <name>', 'same as --name')
        .option('--description <text>', 'agent description')
        .option('--discoverable', 'list the agent in discovery', true)
        .option('--no-discoverable', 'do not list the agent in discovery')
        .option('--local', 'offline same-machine agent, no cloud or login', false)
        .option('--deployment <name>', 'deployment to enroll with (default: the one the code names)')
        .option(
          '--enrollment-grant <code>',
          'operator enrollment code (required for self-hosted registration); "-" reads it from standard input (env SVC_ENROLLMENT_GRANT), out of sight of other local users',
        )
        .option('--tenant <id>', 'tenant id, with a legacy raw grant')
        .option('--agent-id <id>', 'agent id, with a legacy raw grant'),
    ),
  );
  action(app, register, async (run) => {
    const o = run.opts<{
      name?: string;
      displayName?: string;
      description?: string;
      discoverable: boolean;
      local: boolean;
      deployment?: string;
      enrollmentGrant?: string;
      tenant?: string;
      agentId?: string;
    }>();
    if (o.local) {
      if (o.enrollmentGrant || o.deployment)
        throw usageError('--local makes an offline agent of this machine: no --enrollment-grant, no --deployment.');
      if (o.name && o.displayName && o.name !== o.displayName)
        throw usageError('--name and --display-name differ; give one.');
      const name = o.name ?? o.displayName;
      if (!name) throw usageError('A --local agent needs --name (its name among the local agents).');
      const agent = await (await run.link()).registerLocal({ name });
      run.print(
        agent,
        () =>
          `Registered ${agent.name}, a local agent of this machine (no relay). It messages the other local agents through the local nats-server: svc start --local-only.\n`,
      );
      return;
    }
    // A command line is readable by every local user (/proc), and the code alone enrolls: it
    // may come from standard input or the environment instead.
    const given = o.enrollmentGrant ?? run.env.SVC_ENROLLMENT_GRANT;
    const code = (given === '-' ? await run.readStdin() : given)?.trim();
    if (!code) throw usageError('A self-hosted registration needs --enrollment-grant CODE from the relay operator.');
    // --tenant or --agent-id say the value is meant as a legacy raw grant; otherwise it is a mistyped code
    if (!code.startsWith(`${ENROLLMENT_CODE_PREFIX}.`) && (o.tenant !== undefined || o.agentId !== undefined)) {
      if (!o.tenant || !o.agentId) throw usageError('A legacy raw grant needs both --tenant and --agent-id.');
      throw new CliError(
        'not_built_yet',
        `Legacy raw grants are not supported by this version; ask the operator for an enrollment code (${ENROLLMENT_CODE_PREFIX}.…).`,
      );
    }
    checkEnrollmentCode(code);
    if (o.name && o.displayName && o.name !== o.displayName)
      throw usageError('--name and --display-name differ; give one.');
    const name = o.name ?? o.displayName ?? (await getSetting(app.home, DEFAULT_PROFILE, 'name'));
    const description = o.description ?? (await getSetting(app.home, DEFAULT_PROFILE, 'description'));
    const deployment = o.deployment ?? (await getSetting(app.home, DEFAULT_PROFILE, 'deployment'));
    // the specification: registration waits for receive readiness, unless --no-autostart
    const input: RegisterInput = { enrollment_code: code, discoverable: o.discoverable, wait_receiving: run.autostart };
    if (name) {
      input.name = name;
      input.display_name = name;
    }
    if (description) input.description = description;
    if (deployment) input.deployment = deployment;
    run.info(`registering with deployment ${deployment ?? '(named by the code)'}`);
    const agent = await (await run.link()).register(input);
    run.print(agent, () => {
      const { receiving, session_error, ...shown } = agent;
      const state =
        receiving === false
          ? `Not receiving yet${session_error ? ` (${session_error})` : ''}; the daemon keeps trying, and svc agent list shows when it connects.\n`
          : '';
      return `Registered ${agent.name} (${agent.agent_number}).\n${agentText(shown)}${state}`;
    });
  });

  const send = common(
    new Command('send')
      .description('send an end-to-end encrypted message')
      .argument('[to_number]', 'agent number (or @space path); required unless --to or --conversation-id')
      .argument('[content]', 'message content, unless --message, --stdin or --file')
      .option('--to <agent_number>', 'recipient agent number')
      .option('-m, --message <text>', 'message content')
      .addOption(choice('--content-type <type>', 'content type', CONTENT_TYPES, 'text'))
      .option('--conversation-id <id>', 'group or broadcast conversation instead of a recipient')
      .option('--stdin', 'read the content from standard input', false)
      .option('--file <path>', 'attach a file (direct recipient only; the content becomes the caption)')
      .option('--attach <path>', 'same as --file'),
  );
  action(app, send, async (run, first?: string, second?: string) => {
    const o = run.opts<{
      to?: string;
      message?: string;
      contentType: ContentType;
      conversationId?: string;
      stdin: boolean;
      file?: string;
      attach?: string;
    }>();
    let to: string | undefined;
    let positionalContent: string | undefined;
    if (o.to !== undefined || o.conversationId !== undefined) {
      if (second !== undefined)
        throw usageError('With --to or --conversation-id, give at most one positional CONTENT.');
      to = o.to;
      positionalContent = first;
    } else {
      to = first;
      positionalContent = second;
    }
    if (to === undefined && o.conversationId === undefined) {
      throw usageError('Give the recipient: TO_NUMBER, --to or --conversation-id.');
    }
    refuseSpacePath(to);
    const file = o.file ?? o.attach;
    if (file !== undefined && o.conversationId !== undefined) {
      throw usageError('Attachments go to a direct recipient only; conversation media is unsupported.');
    }
    checkedFile(o.contentType, file);
    const content = await contentFrom(run, {
      positional: positionalContent,
      message: o.message,
      stdin: o.stdin,
      file,
      accepted: 'CONTENT, --message TEXT, --stdin or --file PATH',
    });
    const { link, agent } = await run.asAgent();
    run.info(`sending as ${agent} to ${to ?? `conversation ${o.conversationId}`}`);
    const sendIt = () =>
      link.send(agent, {
        to: to ?? '',
        content,
        content_type: file === undefined ? o.contentType : 'media',
        ...(o.conversationId === undefined ? {} : { conversation_id: o.conversationId }),
        // the daemon reads, encrypts and uploads the file itself (same machine, same user)
        ...(file === undefined ? {} : { file_path: resolve(file) }),
      });
    const sent = file === undefined ? await sendIt() : await withProgress(run, agent, sendIt);
    run.print(sent, () => sentText(sent));
  });

  const reply = common(
    new Command('reply')
      .description('reply to a message')
      .argument('<message_id>', 'the message to reply to')
      .argument('[content]', 'reply content, unless --message, --stdin or --file')
      .option('-m, --message <text>', 'reply content')
      .option('--to <agent_number>', 'recipient (overrides the inferred one)')
      .option('--stdin', 'read the content from standard input', false)
      .addOption(choice('--content-type <type>', 'content type', CONTENT_TYPES, 'text'))
      .option('--file <path>', 'attach a file (direct replies only; the content becomes the caption)')
      .option('--attach <path>', 'same as --file'),
  );
  action(app, reply, async (run, messageId?: string, positional?: string) => {
    const o = run.opts<{
      message?: string;
      to?: string;
      stdin: boolean;
      contentType: ContentType;
      file?: string;
      attach?: string;
    }>();
    refuseSpacePath(o.to);
    const file = checkedFile(o.contentType, o.file ?? o.attach);
    const content = await contentFrom(run, {
      positional,
      message: o.message,
      stdin: o.stdin,
      file,
      accepted: 'CONTENT, --message TEXT, --stdin or --file PATH',
    });
    const { link, agent } = await run.asAgent();
    const replyIt = () =>
      link.reply(agent, {
        message_id: messageId!,
        content,
        content_type: file === undefined ? o.contentType : 'media',
        ...(o.to === undefined ? {} : { to: o.to }),
        ...(file === undefined ? {} : { file_path: resolve(file) }),
      });
    const sent = file === undefined ? await replyIt() : await withProgress(run, agent, replyIt);
    run.print(sent, () => sentText(sent));
  });

  const inbox = common(
    new Command('inbox')
      .description('unacknowledged inbound messages')
      .addOption(
        choice(
          '--source <source>',
          'auto reads local-first; local or api inspect only that inbox',
          INBOX_SOURCES,
          'auto',
        ),
      ),
  );
  action(app, inbox, async (run) => {
    const o = run.opts<{ source: (typeof INBOX_SOURCES)[number] }>();
    const { link, agent } = await run.asAgent();
    const messages = await link.inbox(agent, { source: o.source });
    run.print(messages, () => messagesTable(messages, 'Inbox is empty.'));
  });

  const read = common(
    new Command('read')
      .description('messages of a conversation from the local archive')
      .argument('<conversation_id>', 'conversation id or agent number')
      .option('--last <n>', 'only the N most recent messages', intParser(1, 100_000, '--last'))
      .option('--since <timestamp>', 'only messages since this ISO-8601 timestamp', isoTimeParser)
      .option('--save <dir>', 'fetch, check and decrypt the attachments of the messages shown into DIR'),
  );
  action(app, read, async (run, id?: string) => {
    const o = run.opts<{ last?: number; since?: string; save?: string }>();
    const { link, agent } = await run.asAgent();
    const messages = await link.read(agent, id!, { last: o.last, since: o.since });
    if (o.save === undefined) {
      run.print(messages, () => messagesTable(messages));
      return;
    }
    const dir = resolve(o.save);
    const saved: SavedAttachment[] = [];
    /** files this agent sent that the relay deleted once their recipient saved them */
    const gone: { message_id: string; reason: string }[] = [];
    for (const m of messages) {
      if (m.content_type !== 'media') continue;
      try {
        saved.push(await withProgress(run, agent, () => link.saveAttachment(agent, m.message_id, dir)));
      } catch (err) {
        // one's own file is gone from the relay once the peer saved it: no reason to leave
        // the peer's files in the same conversation unsaved
        if (m.direction !== 'outbound' || (err as { code?: unknown }).code !== 'unknown_blob') throw err;
        gone.push({
          message_id: m.message_id,
          reason: 'sent by you; the relay deleted it once its recipient saved it',
        });
      }
    }
    run.print(
      { messages, saved, ...(gone.length > 0 ? { not_saved: gone } : {}) },
      () =>
        messagesTable(messages) +
        (saved.length === 0 && gone.length === 0 ? 'No attachments to save.\n' : saved.map(savedText).join('')) +
        gone.map((g) => `not saved: the file of message ${g.message_id}, ${g.reason}\n`).join(''),
    );
  });

  const watch = withVerbose(
    withJson(
      withAs(new Command('watch').description('print inbound messages as they arrive (until interrupted)')),
      'NDJSON: one object per inbound message, one per line',
    ),
  );
  action(app, watch, async (run) => {
    const link = await run.link();
    const agent = run.explicitAgent() ?? (await run.agent(link));
    const signal = run.stopSignal();
    run.info(`watching ${agent}; interrupt to stop`);
    for await (const event of eventsUntil(link, agent, signal)) {
      if (signal.aborted) break;
      if (event.type === 'message' && event.message.direction === 'inbound') {
        run.out(run.json ? jsonLine({ agent: event.agent, ...event.message }) : messageLine(event.message));
      } else if (event.type === 'peer_key_changed') {
        warn(run.app.io.stderr, `${event.peer} changed its key; see svc keys status --as ${event.agent}`);
      } else if (event.type === 'sequence') {
        const what =
          event.kind === 'gap' && event.missing
            ? `#${event.missing.from}${event.missing.to === event.missing.from ? '' : `-#${event.missing.to}`} missing before #${event.seq}`
            : event.kind === 'reordered'
              ? `#${event.seq} arrived late (reordered)`
              : `#${event.seq} arrived again (duplicate)`;
        warn(run.app.io.stderr, `${event.conversation_id}: from ${event.sender}: ${what}`);
      } else if (event.type === 'rejected') {
        warn(run.app.io.stderr, `rejected message ${event.message_id} from ${event.from}: ${event.reason}`);
      } else {
        run.debug(`event ${JSON.stringify(event)}`);
      }
    }
    // the stream ends by itself only when the daemon goes away: not a clean end of watching
    if (!signal.aborted) {
      throw new CliError(
        'daemon_unavailable',
        'The svc daemon stopped, which ended svc watch; start it again (svc start) and rerun svc watch.',
      );
    }
  });

  const mcp = mcpCommand(app);

  return [inbox, init, mcp, read, register, reply, send, watch];
}
