/**
 * Context notes: local files a person can read, one per conversation or peer, kept per
 * agent under $SVC_HOME/agents/<name>/context/{conversations,peers}/<id>.md (a small header,
 * then the body), beside that agent's archive: an agent's notes are its own, and go with it
 * when it is deregistered. They never leave the machine. Every write goes to a temporary
 * file in the same directory and is renamed (or, for a save, hard-linked, which fails if the
 * name exists) into place, so a reader sees the old note or the new one, never half of one,
 * and two saves of the same note cannot both succeed.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { agentRequired, CliError } from './errors.js';

export type NoteKind = 'conversation' | 'peer';
export type ConversationType = 'direct' | 'group' | 'broadcast';

export interface ContextNote {
  kind: NoteKind;
  /** conversation id or peer agent number */
  id: string;
  conversation_type?: ConversationType;
  summary?: string;
  updated_at: string;
  body: string;
  path: string;
}

const DIRS: Record<NoteKind, string> = { conversation: 'conversations', peer: 'peers' };
const CONVERSATION_ID = /^[A-Za-z0-9._:@-]{1,256}$/;
const AGENT_NUMBER = /^[A-Za-z0-9_-]{1,128}$/;

export function checkTarget(kind: NoteKind, id: string): void {
  const ok = kind === 'conversation' ? CONVERSATION_ID.test(id) : AGENT_NUMBER.test(id);
  if (!ok) {
    throw new CliError(
      'validation_failed',
      kind === 'conversation'
        ? '--conversation-id may use letters, digits and ._:@- (1 to 256).'
        : '--peer must be an agent number (letters, digits, _ and -).',
      { exitCode: 2 },
    );
  }
}

/** The file name of an id: characters outside [A-Za-z0-9_@-] as %XX, so no id names a path (`..`, `/`). */
const fileName = (id: string) =>
  `${id.replace(/[^A-Za-z0-9_@-]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}.md`;

/** `dir`: an agent's notes directory (notesDir). */
export const notePath = (dir: string, kind: NoteKind, id: string) => join(dir, DIRS[kind], fileName(id));

/** The notes directory of the local agent `name`. */
export const notesDir = (home: string, name: string) => join(home, 'agents', name, 'context');

interface LocalAgentFile {
  name: string;
  agent_number?: string;
  capabilities?: string[];
}

/** The local agents, from their agent.json files (no daemon needed); one that cannot be read counts by its name. */
async function localAgents(home: string): Promise<LocalAgentFile[]> {
  let names: string[];
  try {
    names = await readdir(join(home, 'agents'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: LocalAgentFile[] = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue; // an agent set aside by deregister
    let text: string;
    try {
      text = await readFile(join(home, 'agents', name, 'agent.json'), 'utf8');
    } catch {
      continue; // not an agent's directory
    }
    let v: Partial<LocalAgentFile> = {};
    try {
      v = JSON.parse(text) as Partial<LocalAgentFile>;
    } catch {
      // damaged: still an agent of this machine, known by its name
    }
    out.push({
      name,
      ...(typeof v.agent_number === 'string' ? { agent_number: v.agent_number } : {}),
      ...(Array.isArray(v.capabilities) ? { capabilities: v.capabilities } : {}),
    });
  }
  return out;
}

/**
 * The local agent whose notes a command uses: `wanted` (--as, else SVC_AGENT: a name, or
 * the number an agent.json holds), else the only local agent (a machine's uplink identity,
 * which has no conversations, does not count). Read from the files: no daemon needed.
 */
export async function notesAgent(
  home: string,
  wanted: string | undefined,
): Promise<{ name: string /** the machine's only agent */; alone: boolean }> {
  const agents = await localAgents(home);
  const chosen = (name: string) => ({ name, alone: agents.length === 1 });
  if (wanted !== undefined) {
    const found = agents.find((a) => a.name === wanted) ?? agents.find((a) => a.agent_number === wanted);
    if (!found) throw new CliError('unknown_agent', `No local agent ${wanted}; see svc agent list.`);
    return chosen(found.name);
  }
  // capabilities unknown (a damaged agent.json): counted, so the choice is never made for the user wrongly
  const people = agents.filter(
    (a) => !a.capabilities || a.capabilities.includes('http-relay') || a.capabilities.includes('local'),
  );
  if (people.length === 1) return chosen((people[0] as LocalAgentFile).name);
  if (people.length === 0) {
    throw new CliError(
      'unknown_agent',
      'No local agent is registered, and context notes are kept per agent; register one with `svc register --enrollment-grant CODE`.',
    );
  }
  throw agentRequired(people.map((a) => a.name));
}

/**
 * Notes from before they were kept per agent ($SVC_HOME/context/{conversations,peers}):
 * moved to `agent`'s when it is the machine's only agent (a note it already has stays where
 * it is); otherwise left in place. Returns a warning to print when some are left there.
 */
export async function adoptEarlierNotes(
  home: string,
  agent: { name: string; alone: boolean },
): Promise<string | undefined> {
  const earlier = join(home, 'context');
  const left: string[] = [];
  for (const sub of Object.values(DIRS)) {
    let names: string[];
    try {
      names = (await readdir(join(earlier, sub))).filter((n) => n.endsWith('.md') && !n.startsWith('.'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    if (!agent.alone) {
      if (names.length > 0) left.push(join(earlier, sub));
      continue;
    }
    const to = join(notesDir(home, agent.name), sub);
    await mkdir(to, { recursive: true, mode: 0o700 });
    for (const n of names) {
      const there = await stat(join(to, n)).then(
        () => true,
        () => false,
      );
      if (there) left.push(join(earlier, sub, n));
      else await rename(join(earlier, sub, n), join(to, n));
    }
  }
  if (left.length === 0) return undefined;
  return `context notes from before notes were kept per agent are still in ${left.join(', ')}: move each into $SVC_HOME/agents/NAME/context/ of the agent it belongs to`;
}

/** One line of header text: no line breaks (they would end the header). */
const oneLine = (s: string) => s.replace(/\r?\n/g, ' ');

function render(n: Omit<ContextNote, 'path'>): string {
  const lines = [
    '---',
    `${n.kind}: ${n.id}`,
    ...(n.conversation_type ? [`conversation_type: ${n.conversation_type}`] : []),
    ...(n.summary !== undefined ? [`summary: ${oneLine(n.summary)}`] : []),
    `updated_at: ${n.updated_at}`,
    '---',
    '',
  ];
  return `${lines.join('\n')}\n${storedBody(n.body)}`;
}

/** A body as its file holds it (a text file's lines end with a newline): what save, edit and load all answer. */
function storedBody(body: string): string {
  return body === '' || body.endsWith('\n') ? body : `${body}\n`;
}

function parse(text: string, kind: NoteKind, id: string, path: string): ContextNote {
  const m = /^---\n([\s\S]*?)\n---\n\n?([\s\S]*)$/.exec(text);
  const fields = new Map<string, string>();
  for (const line of (m?.[1] ?? '').split('\n')) {
    const at = line.indexOf(': ');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 2));
  }
  const type = fields.get('conversation_type');
  return {
    kind,
    id,
    ...(type === 'direct' || type === 'group' || type === 'broadcast' ? { conversation_type: type } : {}),
    ...(fields.has('summary') ? { summary: fields.get('summary') as string } : {}),
    updated_at: fields.get('updated_at') ?? '',
    body: m ? (m[2] ?? '') : text,
    path,
  };
}

async function tempBeside(path: string, text: string): Promise<string> {
  const dir = join(path, '..');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await fh.writeFile(text, 'utf8');
    await fh.sync();
  } finally {
    await fh.close();
  }
  return tmp;
}

export async function loadNote(dir: string, kind: NoteKind, id: string): Promise<ContextNote | undefined> {
  checkTarget(kind, id);
  const path = notePath(dir, kind, id);
  try {
    return parse(await readFile(path, 'utf8'), kind, id, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Creates a note; refuses (context_exists) when one is there. */
export async function saveNote(
  dir: string,
  note: { kind: NoteKind; id: string; conversation_type?: ConversationType; summary?: string; body: string },
  now = new Date(),
): Promise<ContextNote> {
  checkTarget(note.kind, note.id);
  const path = notePath(dir, note.kind, note.id);
  const full = { ...note, body: storedBody(note.body), updated_at: now.toISOString() };
  const tmp = await tempBeside(path, render(full));
  try {
    await link(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new CliError(
        'context_exists',
        `A context file for ${note.kind} ${note.id} exists (${path}); use svc context edit or append.`,
      );
    }
    throw err;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  return { ...full, path };
}

/** append: adds to the body (creating the note if there is none); edit: replaces the body of an existing note. */
export async function changeNote(
  dir: string,
  mode: 'append' | 'edit',
  target: { kind: NoteKind; id: string },
  change: { body: string; summary?: string },
  now = new Date(),
): Promise<ContextNote> {
  const current = await loadNote(dir, target.kind, target.id);
  if (!current && mode === 'edit') {
    throw new CliError(
      'unknown_context',
      `No context file for ${target.kind} ${target.id}; create it with svc context save.`,
    );
  }
  const body = storedBody(mode === 'edit' || !current ? change.body : `${storedBody(current.body)}${change.body}`);
  const next: Omit<ContextNote, 'path'> = {
    kind: target.kind,
    id: target.id,
    ...(current?.conversation_type ? { conversation_type: current.conversation_type } : {}),
    ...(change.summary !== undefined
      ? { summary: change.summary }
      : current?.summary !== undefined
        ? { summary: current.summary }
        : {}),
    updated_at: now.toISOString(),
    body,
  };
  const path = notePath(dir, target.kind, target.id);
  const tmp = await tempBeside(path, render(next));
  await rename(tmp, path);
  return { ...next, path };
}

export async function deleteNote(dir: string, kind: NoteKind, id: string): Promise<string> {
  checkTarget(kind, id);
  const path = notePath(dir, kind, id);
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new CliError('unknown_context', `No context file for ${kind} ${id}.`);
    }
    throw err;
  }
  return path;
}

export async function listNotes(dir: string, kind?: NoteKind): Promise<ContextNote[]> {
  const out: ContextNote[] = [];
  for (const k of kind ? [kind] : (['conversation', 'peer'] as const)) {
    let names: string[];
    try {
      names = await readdir(join(dir, DIRS[k]));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    for (const name of names.sort()) {
      if (!name.endsWith('.md') || name.startsWith('.')) continue;
      const id = decodeURIComponent(name.slice(0, -3));
      const note = await loadNote(dir, k, id).catch(() => undefined);
      if (note) out.push(note);
    }
  }
  return out;
}
