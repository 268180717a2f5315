/** context …: an agent's local notes per conversation or peer, under $SVC_HOME/agents/NAME/context (cli/src/context-notes.ts). */
import { Command } from 'commander';
import type { App, Run } from '../app.js';
import {
  adoptEarlierNotes,
  type ContextNote,
  type ConversationType,
  changeNote,
  deleteNote,
  listNotes,
  loadNote,
  type NoteKind,
  notesAgent,
  notesDir,
  saveNote,
} from '../context-notes.js';
import { usageError } from '../errors.js';
import { action, choice, common } from '../options.js';
import { keyValues, table, warn } from '../output.js';

const target = (c: Command) =>
  c
    .option('--conversation-id <id>', 'conversation (or --peer)')
    .option('--peer <agent_number>', 'peer (or --conversation-id)');
const body = (c: Command) =>
  c.option('-m, --message <text>', 'body (default: standard input)').option('-s, --summary <text>', 'summary');

interface TargetOpts {
  conversationId?: string;
  peer?: string;
  label?: string;
  conversationType?: ConversationType;
}

/** Exactly one of --conversation-id / --peer (--label is the same as --peer). */
function targetOf(o: TargetOpts): { kind: NoteKind; id: string } {
  if (o.peer !== undefined && o.label !== undefined && o.peer !== o.label) {
    throw usageError('--label is an alias of --peer; give one of them.');
  }
  const peer = o.peer ?? o.label;
  if ((o.conversationId === undefined) === (peer === undefined)) {
    throw usageError('Give exactly one of --conversation-id or --peer.');
  }
  if (o.conversationType !== undefined && o.conversationId === undefined) {
    throw usageError('--conversation-type goes with --conversation-id only.');
  }
  return o.conversationId !== undefined
    ? { kind: 'conversation', id: o.conversationId }
    : { kind: 'peer', id: peer as string };
}

/** The kind of conversation an id names by its form, if it names one. */
function typeOfId(id: string): ConversationType | undefined {
  if (id.startsWith('dm:')) return 'direct';
  if (id.startsWith('grp:')) return 'group';
  if (id.startsWith('bc:')) return 'broadcast';
  return undefined;
}

/** The body: --message, else standard input (a final newline of the input is kept as typed). */
async function bodyOf(run: Run, message: string | undefined): Promise<string> {
  if (message !== undefined) return message;
  return run.readStdin();
}

const noteText = (n: ContextNote) =>
  keyValues([
    [n.kind, n.id],
    ['type', n.conversation_type],
    ['summary', n.summary],
    ['updated', n.updated_at],
    ['file', n.path],
  ]);

/** The notes directory of the agent this command acts as (--as, SVC_AGENT, else the only one), with earlier notes brought in. */
async function notesOf(app: App, run: Run): Promise<string> {
  const agent = await notesAgent(app.home, run.explicitAgent());
  const warning = await adoptEarlierNotes(app.home, agent);
  if (warning) warn(app.io.stderr, warning);
  return notesDir(app.home, agent.name);
}

export function contextCommand(app: App): Command {
  const context = new Command('context').description("an agent's local context notes per conversation or peer");

  const save = common(
    body(
      target(new Command('save').description('create a context file (errors if it exists)')).option(
        '--label <agent_number>',
        'alias of --peer',
      ),
    ).addOption(choice('--conversation-type <type>', 'with --conversation-id only', ['direct', 'group', 'broadcast'])),
  );
  action(app, save, async (run) => {
    const o = run.opts<TargetOpts & { message?: string; summary?: string }>();
    const t = targetOf(o);
    const implied = t.kind === 'conversation' ? typeOfId(t.id) : undefined;
    if (o.conversationType !== undefined && implied !== undefined && implied !== o.conversationType) {
      throw usageError(`${t.id} is a ${implied} conversation, not ${o.conversationType}.`);
    }
    const type = o.conversationType ?? implied;
    const text = await bodyOf(run, o.message);
    if (text.trim() === '' && o.summary === undefined) {
      throw usageError('Nothing to save: give --message, standard input or --summary.');
    }
    const note = await saveNote(await notesOf(app, run), {
      ...t,
      ...(type !== undefined ? { conversation_type: type } : {}),
      ...(o.summary !== undefined ? { summary: o.summary } : {}),
      body: text,
    });
    run.print(note, () => `Saved.\n${noteText(note)}`);
  });

  for (const mode of ['append', 'edit'] as const) {
    const cmd = common(
      body(
        target(
          new Command(mode).description(
            mode === 'append' ? 'append to a context file' : 'replace the whole body of a context file',
          ),
        ),
      ),
    );
    action(app, cmd, async (run) => {
      const o = run.opts<TargetOpts & { message?: string; summary?: string }>();
      const t = targetOf(o);
      const text = await bodyOf(run, o.message);
      if (mode === 'append' && text.trim() === '' && o.summary === undefined) {
        throw usageError('Nothing to append: give --message, standard input or --summary.');
      }
      const note = await changeNote(await notesOf(app, run), mode, t, {
        body: text,
        ...(o.summary !== undefined ? { summary: o.summary } : {}),
      });
      run.print(note, () => `${mode === 'append' ? 'Appended' : 'Replaced'}.\n${noteText(note)}`);
    });
    context.addCommand(cmd);
  }

  const del = common(target(new Command('delete').description('delete a context file (no confirmation)')));
  action(app, del, async (run) => {
    const t = targetOf(run.opts<TargetOpts>());
    const path = await deleteNote(await notesOf(app, run), t.kind, t.id);
    run.print({ ...t, deleted: true, path }, () => `Deleted ${path}.\n`);
  });

  const load = common(target(new Command('load').description('print a context file (nothing if none)')));
  action(app, load, async (run) => {
    const t = targetOf(run.opts<TargetOpts>());
    const note = await loadNote(await notesOf(app, run), t.kind, t.id);
    // nothing at all when there is no note: a script can use the output as is
    if (!note) {
      if (run.json) run.print(null, () => '');
      return;
    }
    run.print(note, () => note.body);
  });

  const list = common(
    new Command('list')
      .description('context files')
      .addOption(choice('--type <type>', 'kind', ['conversation', 'peer'])),
  );
  action(app, list, async (run) => {
    const o = run.opts<{ type?: NoteKind }>();
    const notes = await listNotes(await notesOf(app, run), o.type);
    run.print(
      notes.map(({ body: _b, ...rest }) => rest),
      () =>
        table(
          [
            ['type', 'kind'],
            ['id', 'id'],
            ['summary', 'summary'],
            ['updated', 'updated_at'],
          ],
          notes,
          'No context files.',
        ),
    );
  });

  for (const c of [save, del, load, list]) context.addCommand(c);
  return context;
}
