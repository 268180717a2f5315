/**
 * The dashboard (Ink + React, written with createElement so the package needs no JSX
 * build step). Read-only: it loads snapshots from the daemon (./model.ts) and reloads
 * them when the daemon's event stream says something happened. A daemon that is down is
 * shown with the command that starts it, and retried.
 */
import {
  type ArchivedMessage,
  addressee,
  type ConversationSummary,
  conversationLabel,
  conversationTitle,
  messageText,
  refusedAdviceShort,
} from '@svc/daemon/client';
import { printable } from '@svc/shared';
import { Box, type Key, Text, useApp, useInput, useStdout } from 'ink';
import {
  createElement as h,
  type ReactElement,
  type ReactNode,
  useCallback,
  useEffect,
  useReducer,
  useRef,
  useState,
} from 'react';
import stringWidth from 'string-width';
import { type AgentView, loadProfile, loadSnapshot, type Snapshot, type Source } from './model.js';

export type Pane = 'agents' | 'inbox' | 'conversations';

interface Nav {
  /** the agent shown (local name); undefined: the first */
  agent: string | undefined;
  pane: Pane;
  sel: Record<Pane, number>;
  /**
   * an open conversation: its newest `last` messages (more are read as the selection goes
   * above the first); sel: the selected message (the newest when it opens); total: its
   * messages in all, as the conversations list counts them, when it does
   */
  open?: {
    id: string;
    title: string;
    messages: ArchivedMessage[];
    sel: number;
    last: number;
    total?: number;
    older?: boolean;
  };
  /** editing: the query is being typed; results: what the archive answered */
  search?: { editing: boolean; query: string; results?: ArchivedMessage[]; sel?: number };
  /** one message read whole (Enter on a message of a conversation or of the results); scroll: first line shown */
  message?: { m: ArchivedMessage; scroll: number };
}
const PANES: Pane[] = ['agents', 'inbox', 'conversations'];

export interface DashboardProps {
  source: Source;
  /** the agent to show first (--as / SVC_AGENT) */
  agent?: string;
  /** how long to wait before asking a down daemon again, and before reconnecting events */
  retryMs?: number;
  /** terminal size when the output stream does not report one (tests) */
  size?: { columns: number; rows: number };
  /**
   * The first snapshot, already asked for (`svc tui` asks before it loads Ink, so the
   * daemon answers while Ink loads): the first load waits for it instead of asking again.
   */
  initial?: Promise<Snapshot>;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** Code units segmented at once (see graphemeRuns). */
const SEGMENT_WINDOW = 1024;

/**
 * `text` in runs of whole graphemes, each about SEGMENT_WINDOW code units. Intl.Segmenter's
 * time over one string grows with the square of its length on Node 20 (40,000 characters
 * 0.5 s, 160,000 more than a minute), and a peer chooses what is shown: one long message
 * froze the whole terminal UI. Segmented a window at a time, the last grapheme of each
 * window (which may go on past it) starts the next one.
 */
function* graphemeRuns(text: string): Generator<string[]> {
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + SEGMENT_WINDOW);
    // a window ends between code points (a cut surrogate pair would end the grapheme before it)
    if (end < text.length && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end--;
    const window = text.slice(start, end);
    const run = [...graphemes.segment(window)];
    if (end >= text.length || run.length === 1) {
      // the end of the text, or one grapheme longer than a window: taken as it is
      yield run.map((g) => g.segment);
      start += window.length;
      continue;
    }
    const last = run.pop() as Intl.SegmentData;
    yield run.map((g) => g.segment);
    start += last.index;
  }
}

function* graphemesOf(text: string): Generator<string> {
  for (const run of graphemeRuns(text)) yield* run;
}

/**
 * Columns a text takes in the terminal, measured as Ink measures it (string-width): a
 * character as the user sees it (a grapheme: an emoji sequence joined by ZWJ, a flag, a
 * letter and its accents) takes 2 columns when wide (East Asian, emoji), 0 when it draws
 * nothing. Counting code points took `👩‍💻` for 5 columns, and UTF-16 units a line of
 * CJK text for half its width. Long text is measured a run of graphemes at a time (widths
 * add up across graphemes; see graphemeRuns).
 */
export const columns = (text: string): number => {
  if (text.length <= SEGMENT_WINDOW) return stringWidth(text);
  let width = 0;
  for (const run of graphemeRuns(text)) width += stringWidth(run.join(''));
  return width;
};

/** One line of at most `width` columns, as text (see printable). */
export function clip(text: string, width: number): string {
  if (width <= 0) return '';
  // no more of a long text than a line could show is looked at (a 190,000-character
  // message in a list row): every character takes a column, but for the few that draw nothing
  const limit = width * 4 + 256;
  const cut = text.length > limit;
  const flat = printable((cut ? text.slice(0, limit) : text).replace(/\s+/g, ' '));
  if (!cut && columns(flat) <= width) return flat;
  let out = '';
  let used = 0;
  for (const segment of graphemesOf(flat)) {
    const w = columns(segment);
    if (used + w > width - 1) break;
    out += segment;
    used += w;
  }
  return `${out}…`;
}

/**
 * Text broken into lines of at most `width` columns, at a space where there is one (its
 * own line breaks kept, tabs as spaces), never inside a character as the user sees it.
 */
export function wrapLines(text: string, width: number): string[] {
  // a message read whole is wrapped again at every render (each key): a long one once
  if (lastWrap && lastWrap.text === text && lastWrap.width === width) return lastWrap.lines;
  const out: string[] = [];
  const w = Math.max(1, width);
  // what a peer wrote reaches the terminal as text, never as a command to it (see printable)
  for (const raw of printable(text.replace(/\t/g, '  ').replace(/\r\n/g, '\n'), true).split('\n')) {
    let line = '';
    let used = 0;
    for (const c of graphemesOf(raw)) {
      const cw = columns(c);
      if (used + cw > w && line !== '') {
        const space = line.lastIndexOf(' ');
        if (space > 0 && c !== ' ') {
          out.push(line.slice(0, space));
          line = line.slice(space + 1);
          used = columns(line);
        } else {
          out.push(line);
          line = '';
          used = 0;
          if (c === ' ') continue;
        }
      }
      line += c;
      used += cw;
    }
    out.push(line);
  }
  if (text.length > SEGMENT_WINDOW) lastWrap = { text, width, lines: out };
  return out;
}

let lastWrap: { text: string; width: number; lines: string[] } | undefined;

/**
 * The keys in what the terminal sent at once. Ink hands a chunk of plain text to the
 * handler whole (a paste, a held key, keys typed faster than it reads them): `jjj` was no
 * `j`, a pasted `lunch⏎` typed `lunch\r` into the search (the carriage return drawn raw on
 * the keys line) and searched nothing. Each character becomes a key of its own: a carriage
 * return or line feed Enter, a tab Tab, DEL or BS Backspace; other control characters none.
 */
export function keypresses(input: string, key: Key): Array<[string, Key]> {
  // Esc Esc in one read comes as one Escape whose input is the other ESC (it went back one step)
  if (key.escape && input !== '' && [...input].every((c) => c === '\u001b')) {
    return Array.from({ length: input.length + 1 }, () => ['', key] as [string, Key]);
  }
  const chars = [...input];
  if (chars.length <= 1 || key.ctrl || key.meta) return [[input, key]];
  const out: Array<[string, Key]> = [];
  for (const c of chars) {
    const one: Key = { ...key, shift: /[A-Z]/.test(c) };
    if (c === '\r' || c === '\n') out.push(['', { ...one, return: true }]);
    else if (c === '\t') out.push(['', { ...one, tab: true }]);
    else if (c === '\u007f' || c === '\b') out.push(['', { ...one, backspace: true }]);
    else if (!/\p{Cc}/u.test(c)) out.push([c, one]);
  }
  return out;
}

export type KeysMode = 'overview' | 'list' | 'message' | 'down';

/**
 * The keys line for what is on screen: the longest wording that fits the width, so every
 * key stays named on a narrow terminal (the quit key always).
 */
export function keysLine(mode: KeysMode, columns: number): string {
  const variants: Record<KeysMode, string[]> = {
    overview: [
      'Tab pane · ↑↓/j k move · PgUp PgDn Home End · Enter open · Esc back · / search · q quit',
      'Tab pane · ↑↓/j k move · Enter open · Esc back · / search · q quit',
      'Tab pane · j k move · Enter open · Esc back · / search · q quit',
      'Tab · j k · Enter open · Esc back · / search · q quit',
      'Tab · jk · Enter · Esc · / · q quit',
    ],
    list: [
      '↑↓/j k move · PgUp PgDn Home End · Enter read the whole message · Esc back · / search · q quit',
      '↑↓/j k move · Enter read the whole message · Esc back · / search · q quit',
      'j k move · Enter read whole · Esc back · / search · q quit',
      'jk · Enter read · Esc back · / · q quit',
    ],
    message: [
      '↑↓/j k scroll · PgUp PgDn Home End · Esc back · q quit',
      '↑↓/j k scroll · Esc back · q quit',
      'jk scroll · Esc back · q quit',
      'jk · Esc · q quit',
    ],
    down: ['q quit'],
  };
  return variants[mode].find((v) => v.length <= columns) ?? clip('q quit', columns);
}

/** UTC "MM-DD HH:MM": short, and the same on every machine. */
export const shortTime = (iso: string | null | undefined): string =>
  iso ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : '';

/** The least widths of the left (agents) and right (lists, messages) columns, and the least rows of the panels between header and status lines. */
const MIN_LEFT_WIDTH = 24;
const MIN_RIGHT_WIDTH = 20;
const MIN_BODY_ROWS = 8;
/** Messages of a conversation read at a time (the newest first; more as the selection goes above them). */
export const CONVERSATION_PAGE = 200;
/** How far back Enter on an inbox message reads its conversation to open on that message. */
const MAX_READ_BACK = 5_000;
/** Search results asked for. */
const SEARCH_LIMIT = 50;
/** Home and End: a move past either end of any list. */
const LAST = 1_000_000_000;
/** How long a relay profile shown stays unasked while nothing says it changed. */
const PROFILE_MAX_AGE_MS = 60_000;
/** The narrowest terminal the frame is drawn in (the columns shrink to fit; e2e/test/tui-tmux.test.ts checks it whole at 40). */
const MIN_COLUMNS = 40;

/** The rows of a list that fit, keeping the selection in view. */
function windowOf<T>(items: T[], selected: number, rows: number): { items: T[]; offset: number } {
  if (items.length <= rows) return { items, offset: 0 };
  const offset = Math.min(Math.max(0, selected - rows + 1), items.length - rows);
  return { items: items.slice(offset, offset + rows), offset };
}

/**
 * The rows of the inbox and the conversations (`rows` between them): 45% and 55%, and what
 * one list does not need goes to the other (a short list of conversations left the rows
 * under it empty while the inbox showed 10 of 300).
 */
export function splitRows(
  rows: number,
  inbox: number,
  conversations: number,
): { inbox: number; conversations: number } {
  const all = Math.max(2, rows);
  const need = { inbox: Math.max(1, inbox), conversations: Math.max(1, conversations) };
  const share = Math.max(1, Math.floor(all * 0.45));
  if (need.conversations < all - share) return { inbox: all - need.conversations, conversations: need.conversations };
  if (need.inbox < share) return { inbox: need.inbox, conversations: all - need.inbox };
  return { inbox: share, conversations: all - share };
}

/** ` · 1–4 of 9` when a list shows only part of itself (nothing when it shows all): more is there to scroll to. */
function shownOf(win: { items: unknown[]; offset: number }, total: number): string {
  return win.items.length < total ? ` · ${win.offset + 1}–${win.offset + win.items.length} of ${total}` : '';
}

/**
 * The terminal's size, read at each render rather than kept in state: a render that a
 * resize causes before React hears of it (runTui's, ahead of Ink's own redraw) already
 * lays the dashboard out for the new size. A resize also renders it again.
 */
function useTerminalSize(fallback?: { columns: number; rows: number }) {
  const { stdout } = useStdout();
  const [, resized] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    stdout.on('resize', resized);
    return () => {
      stdout.off('resize', resized);
    };
  }, [stdout]);
  return { columns: stdout.columns || fallback?.columns || 100, rows: stdout.rows || fallback?.rows || 30 };
}

/** Who wrote a message, coloured by what the daemon verified: red when the key is in question. */
function sender(m: ArchivedMessage): { text: string; color: string; bold?: boolean } {
  if (m.direction === 'outbound') return { text: 'you', color: 'gray' };
  const trust = m.verified?.trust ?? 'changed';
  return trust === 'pinned'
    ? { text: m.from, color: 'green' }
    : { text: `${m.from} [key ${trust}]`, color: 'red', bold: true };
}

/**
 * A bordered pane. Without a width it takes the rest of the row: Ink lays the last tree out
 * again at a new terminal width before React draws the next one, and a fixed width from
 * the old size would wrap that frame (and leave pieces of it on screen).
 */
function Panel(props: { title: string; focused: boolean; width?: number; height?: number; children?: ReactNode }) {
  return h(
    Box,
    {
      flexDirection: 'column',
      borderStyle: props.focused ? 'double' : 'single',
      borderColor: props.focused ? 'cyan' : 'gray',
      ...(props.width ? { width: props.width, flexShrink: 0 } : { flexGrow: 1, flexShrink: 1, minWidth: 0 }),
      ...(props.height ? { height: props.height } : {}),
      paddingX: 1,
    },
    h(
      Text,
      { bold: true, color: props.focused ? 'cyan' : undefined, wrap: 'truncate' },
      printable(props.focused ? `▸ ${props.title}` : props.title),
    ),
    props.children,
  );
}

/** Below this width a message line gives the time without the date, and a long sender cut short. */
const NARROW_LINE = 48;

export function MessageLine(props: { m: ArchivedMessage; width: number; selected: boolean }) {
  const { m, width } = props;
  const narrow = width < NARROW_LINE;
  // on a narrow terminal the text had three columns left (60 columns: date, time and sender took them)
  const time = narrow ? shortTime(m.sent_at).slice(6) : shortTime(m.sent_at);
  const head = `${props.selected ? '›' : ' '} ${time} `;
  const who = sender(m);
  const name = narrow ? clip(who.text, 12) : who.text;
  return h(
    Text,
    { wrap: 'truncate', inverse: props.selected },
    head,
    h(Text, { color: who.color, bold: who.bold === true }, name),
    ` ${clip(messageText(m), Math.max(0, width - columns(head) - columns(name) - 2))}`,
  );
}

/** An open conversation's heading: `Conversation with alice`, `Group team`, `Broadcast news`. */
function heading(c: Parameters<typeof conversationLabel>[0]): string {
  const label = conversationLabel(c);
  return `${label.charAt(0).toUpperCase()}${label.slice(1)}`;
}

function ConversationLine(props: { c: ConversationSummary; width: number; selected: boolean }) {
  const { c } = props;
  const unread = c.unread > 0 ? ` (${c.unread} new)` : '';
  const head = `${props.selected ? '›' : ' '} ${printable(conversationTitle(c))}${unread} · ${c.message_count} · ${shortTime(c.last_message_at)} `;
  const last = c.last_message
    ? `${c.last_message.direction === 'outbound' ? 'you: ' : ''}${messageText(c.last_message)}`
    : '';
  return h(
    Text,
    { wrap: 'truncate', inverse: props.selected, bold: c.unread > 0 },
    head,
    h(Text, { color: 'gray' }, clip(last, props.width - columns(head))),
  );
}

function DaemonDown(props: { home: string; reason: string; width: number }) {
  return h(
    Box,
    { flexDirection: 'column', borderStyle: 'round', borderColor: 'yellow', paddingX: 1, width: props.width },
    h(Text, { bold: true, color: 'yellow' }, 'The svc daemon is not running.'),
    // in the background: this terminal stays the TUI's (svc start alone keeps its terminal)
    h(Text, null, 'Start it with:  ', h(Text, { bold: true }, 'svc start -b')),
    h(Text, { color: 'gray' }, clip(`SVC_HOME ${props.home}`, props.width - 4)),
    h(Text, { color: 'gray' }, 'Waiting for it… (q to quit)'),
  );
}

/** The status of the agent shown, when it is out of service (its archive or config cannot be used). */
function outOfService(view: AgentView) {
  const me = view.status.agents.find((a) => a.name === view.agent);
  return me?.session === 'unusable' ? me : undefined;
}

/**
 * What needs the owner, one red line each above the status: an agent out of service and
 * why, a relay that refuses the agent or does not answer it, changed keys.
 */
function warnings(view: AgentView): string[] {
  const out: string[] = [];
  if (view.missing !== undefined) {
    out.push(
      `⚠ no local agent ${view.missing}${view.agent ? `; showing ${view.agent}` : ''} (svc agent list names them)`,
    );
  }
  const me = view.status.agents.find((a) => a.name === view.agent);
  if (me?.session === 'unusable') {
    // the code, the file, what is wrong and what to do: cut to the width like every line here
    const code = me.unusable ? ` (${me.unusable.error})` : '';
    out.push(`⚠ ${me.name} is out of service${code}: ${me.unusable?.message ?? me.session_error ?? ''}`);
  } else if (me?.session === 'refused') out.push(`⚠ ${refusedAdviceShort(me.name)}`);
  else if (me?.session_error) out.push(`⚠ ${me.name} ${me.session}: ${me.session_error}`);
  for (const p of view.trust?.peers ?? []) {
    if (p.trust === 'changed' || p.held > 0) {
      out.push(
        `⚠ ${p.agent_number} changed its key${p.held ? ` (${p.held} held)` : ''}: check with svc keys status --as ${view.agent}`,
      );
    }
  }
  return out;
}

function StatusLines(props: { view: AgentView; width: number }) {
  const { view, width } = props;
  const lines: ReactNode[] = warnings(view).map((w, i) =>
    h(Text, { key: `w-${i}`, color: 'red', wrap: 'truncate' }, clip(w, width)),
  );
  const now = Date.now();
  const deps = view.deployments.map((d) => {
    const expired = Date.parse(d.expires_at) < now;
    return `${d.name}${expired ? ' (EXPIRED: svc deployment renew)' : ` until ${d.expires_at.slice(0, 10)}`}`;
  });
  lines.push(h(Text, { key: 'dep', wrap: 'truncate' }, clip(`deployments: ${deps.join(', ') || 'none'}`, width)));
  const p = view.profile;
  const webhook = !view.agent
    ? 'none (no agent: svc register)'
    : outOfService(view)
      ? 'not asked (the agent is out of service)'
      : !p
        ? 'relay not reachable'
        : p.endpoint_url
          ? `${p.endpoint_url}${p.webhook_secret_set ? ' (signed)' : ''}`
          : 'none';
  lines.push(h(Text, { key: 'wh', wrap: 'truncate' }, clip(`webhook: ${webhook}`, width)));
  return h(Box, { flexDirection: 'column' }, ...lines);
}

export function Dashboard(props: DashboardProps): ReactElement {
  const { source, initial } = props;
  const retryMs = props.retryMs ?? 2000;
  const { exit } = useApp();
  const size = useTerminalSize(props.size);
  const [snap, setSnap] = useState<Snapshot>({ daemon: 'connecting' });
  const [error, setError] = useState<string | undefined>();
  // navigation state lives in a ref: keys can arrive faster than renders, and each must see the last
  const nav = useRef<Nav>({ agent: props.agent, pane: 'inbox', sel: { agents: 0, inbox: 0, conversations: 0 } });
  const [, setTick] = useState(0);
  const update = useCallback((change: Partial<Nav>) => {
    Object.assign(nav.current, change);
    setTick((t) => t + 1);
  }, []);
  const alive = useRef(true);
  /** the terminal is too small for the frame (set as it is drawn): keys but quitting do nothing */
  const tooSmall = useRef(false);

  /** the last snapshot shown, and when its relay profile was asked (see reload) */
  const last = useRef<{ snap?: Snapshot; profileAt: number; profileDue: boolean }>({ profileAt: 0, profileDue: true });

  /**
   * One snapshot loaded and shown. The relay profile (presence, webhook) is asked again
   * only when it may have changed: at the start, for another agent, after a session event,
   * or a minute on; a message is no reason to ask the relay, and the daemon's own calls
   * (inbox, conversations, keys) answer without it.
   */
  const load = useCallback(
    async (asked?: Promise<Snapshot>) => {
      const l = last.current;
      try {
        const fresh = l.profileDue || Date.now() - l.profileAt > PROFILE_MAX_AGE_MS;
        let next = await (asked ?? loadSnapshot(source, nav.current.agent, fresh));
        if (!alive.current) return;
        if (fresh || asked) Object.assign(l, { profileAt: Date.now(), profileDue: false });
        else if (next.daemon === 'up' && next.agent) {
          const before = l.snap?.daemon === 'up' ? l.snap : undefined;
          const kept = before?.agent === next.agent ? before.profile : undefined;
          const profile = kept ?? (await loadProfile(source, next.agent));
          if (!alive.current) return;
          if (!kept) l.profileAt = Date.now();
          if (profile) next = { ...next, profile };
        }
        const before = l.snap?.daemon === 'up' ? l.snap : undefined;
        l.snap = next;
        if (next.daemon === 'up') {
          // the selections within the lists as they are now (a message acknowledged elsewhere
          // shortens the inbox); another agent's lists from their tops, and the agents'
          // cursor on the agent shown
          const { sel } = nav.current;
          const within = (at: number, n: number) => Math.max(0, Math.min(at, n - 1));
          const other = before?.agent !== next.agent;
          const shown = next.status.agents.findIndex((a) => a.name === next.agent);
          nav.current.sel = {
            agents: other && shown >= 0 ? shown : within(sel.agents, next.status.agents.length),
            inbox: other ? 0 : within(sel.inbox, next.inbox.length),
            conversations: other ? 0 : within(sel.conversations, next.conversations.length),
          };
        }
        setSnap(next);
        setError(undefined);
        const o = nav.current.open;
        if (next.daemon === 'up' && next.agent && o) {
          const messages = await source.read(next.agent, o.id, { last: o.last, verified: true });
          const now = nav.current.open;
          if (alive.current && now?.id === o.id) {
            // on the newest message: stay on the newest as more arrive; else on the same one
            // (the list is the newest `last`: a new message moves the others up one)
            const was = now.messages[now.sel]?.message_id;
            const same = messages.findIndex((m) => m.message_id === was);
            const sel = now.sel >= now.messages.length - 1 || same < 0 ? messages.length - 1 : same;
            const total = next.conversations.find((c) => c.conversation_id === o.id)?.message_count ?? now.total;
            update({ open: { ...now, messages, sel: Math.max(0, sel), ...(total !== undefined ? { total } : {}) } });
          }
        }
      } catch (err) {
        if (alive.current) setError((err as Error).message);
      }
    },
    [source, update],
  );

  /**
   * Loads one at a time: asked while one is under way, it loads once more after it (a burst
   * of events is one more load, not one each, and an older load never lands after a newer).
   */
  const loading = useRef<{ running?: Promise<void>; again: boolean }>({ again: false });
  const reload = useCallback(
    (asked?: Promise<Snapshot>): Promise<void> => {
      const q = loading.current;
      if (q.running) {
        q.again = true;
        return q.running;
      }
      const run = async () => {
        let first = asked;
        do {
          q.again = false;
          await load(first);
          first = undefined;
        } while (q.again && alive.current);
        q.running = undefined;
      };
      q.running = run();
      return q.running;
    },
    [load],
  );

  // the event stream drives every reload; while the daemon is down, ask again now and then
  useEffect(() => {
    alive.current = true;
    let stream: Awaited<ReturnType<Source['events']>> | undefined;
    let timer: NodeJS.Timeout | undefined;
    let first = initial;
    const follow = async () => {
      while (alive.current) {
        await reload(first);
        first = undefined;
        try {
          stream = await source.events();
          last.current.profileDue = true; // the relay may have changed while nobody listened
          await reload(); // what happened between the load and the subscription
          for await (const event of stream) {
            if (!alive.current) break;
            const shown = last.current.snap?.daemon === 'up' ? last.current.snap.agent : undefined;
            // a session (any agent's: the agents pane lists them), or something of the agent
            // shown; a transfer's progress changes nothing here
            if (event.type === 'session') {
              if (event.agent === shown) last.current.profileDue = true;
            } else if (event.type === 'transfer' || (shown !== undefined && event.agent !== shown)) continue;
            void reload();
          }
        } catch {
          // the daemon went away: shown as down by the next reload
        }
        if (!alive.current) break;
        await new Promise<void>((r) => {
          timer = setTimeout(r, retryMs);
        });
      }
    };
    void follow();
    return () => {
      alive.current = false;
      clearTimeout(timer);
      stream?.close();
    };
  }, [source, reload, retryMs, initial]);

  const view = snap.daemon === 'up' ? snap : undefined;
  const { pane, sel, open, search, message } = nav.current;
  const lists: Record<Pane, number> = {
    agents: view?.status.agents.length ?? 0,
    inbox: view?.inbox.length ?? 0,
    conversations: view?.conversations.length ?? 0,
  };

  /** Opens a conversation on its newest message, or on `at` (a message chosen in the inbox). */
  const openConversation = async (id: string, title: string, at?: string) => {
    if (!view?.agent) return;
    const total = view.conversations.find((c) => c.conversation_id === id)?.message_count;
    try {
      let last = CONVERSATION_PAGE;
      let messages = await source.read(view.agent, id, { last, verified: true });
      let chosen = at === undefined ? -1 : messages.findIndex((m) => m.message_id === at);
      // further back than one read: read as far as that message (an unread one is rarely far)
      if (at !== undefined && chosen < 0 && messages.length === last && total !== undefined && total > last) {
        last = Math.min(total, MAX_READ_BACK);
        messages = await source.read(view.agent, id, { last, verified: true });
        chosen = messages.findIndex((m) => m.message_id === at);
      }
      update({
        open: {
          id,
          title,
          messages,
          sel: chosen >= 0 ? chosen : Math.max(0, messages.length - 1),
          last,
          ...(total !== undefined ? { total } : {}),
        },
      });
    } catch (err) {
      setError((err as Error).message);
    }
  };

  /** The open conversation's older messages, read as the selection goes above the first: `up` more lines up. */
  const readOlder = async (up: number) => {
    const o = nav.current.open;
    if (!view?.agent || !o || o.older || o.messages.length < o.last) return;
    update({ open: { ...o, older: true } });
    const last = o.last + Math.max(CONVERSATION_PAGE, up);
    try {
      const messages = await source.read(view.agent, o.id, { last, verified: true });
      const now = nav.current.open;
      if (now?.id !== o.id) return;
      const was = messages.findIndex((m) => m.message_id === now.messages[now.sel]?.message_id);
      update({ open: { ...now, messages, last, older: false, sel: Math.max(0, was - up) } });
    } catch (err) {
      if (nav.current.open?.id === o.id) update({ open: { ...nav.current.open, older: false } });
      setError((err as Error).message);
    }
  };

  // the handler Ink holds calls the onKey of the last render: Ink subscribes a new handler
  // only after a frame is drawn, and a key read in between met the previous render's (a
  // dashboard that had not loaded yet, with nothing to move in)
  /** the rows each list shows, and the last line a message read whole scrolls to (set as it is drawn) */
  const pages = useRef({ agents: 1, inbox: 1, conversations: 1, list: 1, message: 1, scrollMax: 0 });
  const latestKey = useRef(onKey);
  latestKey.current = onKey;
  useInput(
    useCallback((input: string, key: Key) => {
      for (const [one, k] of keypresses(input, key)) latestKey.current(one, k);
    }, []),
  );

  function onKey(input: string, key: Key) {
    const { pane, sel, search } = nav.current;
    // nothing on screen to act on (a terminal too small, a daemon down or not yet answering):
    // only the quit its line names; a / there started a search that took q as its text
    if ((tooSmall.current || !view) && !(input === 'q' || (key.ctrl && input === 'c'))) return;
    if (search?.editing) {
      if (key.escape) update({ search: undefined });
      else if (key.return) {
        const q = search.query.trim();
        if (q && !view?.agent)
          setError('No agent to search as: register one with svc register --enrollment-grant CODE.');
        if (!q || !view?.agent) return update({ search: undefined });
        update({ search: { editing: false, query: q } });
        source
          .search(view.agent, q, { limit: SEARCH_LIMIT, verified: true })
          .then((results) => {
            if (nav.current.search?.query === q) update({ search: { editing: false, query: q, results } });
          })
          .catch((err: Error) => {
            update({ search: undefined });
            setError(err.message);
          });
      } else if (key.backspace || key.delete) update({ search: { ...search, query: search.query.slice(0, -1) } });
      else if (input && !key.ctrl && !key.meta && !/\p{Cc}/u.test(input)) {
        update({ search: { ...search, query: search.query + input } });
      }
      return;
    }
    if (input === 'q' || (key.ctrl && input === 'c')) {
      exit();
      return;
    }
    const { message, open } = nav.current;
    // a line, a page (the rows the list shows), or to the first or last
    const page = Math.max(1, pages.current[message ? 'message' : search || open ? 'list' : pane] - 1);
    const move =
      key.downArrow || input === 'j'
        ? 1
        : key.upArrow || input === 'k'
          ? -1
          : key.pageDown
            ? page
            : key.pageUp
              ? -page
              : key.end
                ? LAST
                : key.home
                  ? -LAST
                  : 0;
    if (key.escape) {
      if (message) update({ message: undefined });
      else if (search) update({ search: undefined });
      else update({ open: undefined });
      return;
    }
    // a message read whole: the keys scroll it (the view clamps the line)
    if (message) {
      if (move !== 0) {
        const scroll = Math.min(pages.current.scrollMax, Math.max(0, message.scroll + move));
        update({ message: { ...message, scroll } });
      }
      return;
    }
    // a list of messages (search results, or an open conversation) takes the move and Enter keys
    const results = search && !search.editing ? search.results : undefined;
    const list = results ?? (search ? undefined : open?.messages);
    if (list) {
      const at = results ? (search?.sel ?? 0) : (open?.sel ?? 0);
      if (move !== 0) {
        // above the first message read of a conversation: its older ones
        if (!results && open && at + move < 0 && move !== -LAST) {
          void readOlder(-(at + move));
          return;
        }
        const sel = Math.min(list.length - 1, Math.max(0, at + move));
        if (results && search) update({ search: { ...search, sel } });
        else if (open) update({ open: { ...open, sel } });
        return;
      }
      if (key.return) {
        const m = list[at];
        if (m) update({ message: { m, scroll: 0 } });
        return;
      }
    }
    if (input === '/') {
      update({ search: { editing: true, query: '' } });
      return;
    }
    if (key.tab) {
      const i = PANES.indexOf(pane);
      update({ pane: PANES[(i + (key.shift ? PANES.length - 1 : 1)) % PANES.length]! });
      return;
    }
    if (move !== 0) {
      const n = lists[pane];
      update({ sel: { ...sel, [pane]: n === 0 ? 0 : Math.min(n - 1, Math.max(0, sel[pane] + move)) } });
      return;
    }
    if (key.return && view) {
      if (pane === 'agents') {
        const a = view.status.agents[sel.agents];
        if (a) {
          update({ open: undefined, agent: a.name });
          void reload();
        }
      } else if (pane === 'inbox') {
        const m = view.inbox[sel.inbox];
        if (m) {
          const known = view.conversations.find((c) => c.conversation_id === m.conversation_id);
          void openConversation(m.conversation_id, heading(known ?? { ...m, peer: m.from }), m.message_id);
        }
      } else {
        const c = view.conversations[sel.conversations];
        if (c) void openConversation(c.conversation_id, heading(c));
      }
    }
  }

  const { columns, rows } = size;
  tooSmall.current = false;
  const header = h(
    Text,
    { wrap: 'truncate' },
    h(Text, { bold: true, color: 'cyan' }, 'svc'),
    view
      ? clip(` · daemon ${view.status.version} (pid ${view.status.pid}) · vault ${view.status.vault.kind}`, columns - 4)
      : snap.daemon === 'connecting'
        ? ' · connecting…'
        : ' · daemon down',
  );
  const keysMode: KeysMode =
    snap.daemon !== 'up' ? 'down' : message ? 'message' : (search && !search.editing) || open ? 'list' : 'overview';
  const footer = h(
    Text,
    { color: 'gray', wrap: 'truncate' },
    search?.editing && view ? `search: ${search.query}▏ (Enter to search, Esc to cancel)` : keysLine(keysMode, columns),
  );

  if (snap.daemon !== 'up') {
    return h(
      Box,
      { flexDirection: 'column' },
      header,
      snap.daemon === 'down'
        ? h(DaemonDown, { home: snap.home, reason: snap.reason, width: Math.min(columns, 80) })
        : h(Text, null, 'Connecting to the svc daemon…'),
      error ? h(Text, { color: 'red' }, clip(error, columns)) : null,
      footer,
    );
  }

  const v = snap;
  const statusHeight = 2 + warnings(v).length;
  // the frame's least size: both columns at their least width, and the panels' least body
  // under the header, status lines, error line and footer; a smaller terminal would scroll a
  // cut-off frame, so it gets a line saying what it needs instead
  const least = { columns: MIN_COLUMNS, rows: MIN_BODY_ROWS + 3 + statusHeight };
  if (columns < least.columns || rows < least.rows) {
    tooSmall.current = true;
    // one line on a terminal of the usual 80 columns; wrapped to a narrower one, and no more
    // lines than the terminal has
    const line = `svc tui needs at least ${least.columns}×${least.rows}; this terminal is ${columns}×${rows}: make it larger (q quits).`;
    return h(
      Box,
      { flexDirection: 'column', width: columns },
      ...wrapLines(line, columns)
        .slice(0, Math.max(1, rows))
        .map((l, i) => h(Text, { key: i, wrap: 'truncate' }, l)),
    );
  }
  const leftWidth = Math.max(MIN_LEFT_WIDTH, Math.min(34, Math.floor(columns * 0.3)));
  const rightWidth = Math.max(MIN_RIGHT_WIDTH, columns - leftWidth);
  const inner = (w: number) => w - 4;
  const bodyRows = Math.max(MIN_BODY_ROWS, rows - 3 - statusHeight);
  /** the rows of one panel's list as tall as the body (its borders and title take 3) */
  const listRows = Math.max(1, bodyRows - 3);
  // the agents' list: as many as fit above the presence line, the selected in view
  const agentRows = Math.max(1, listRows - (v.profile ? 1 : 0));
  const agentsWin = windowOf(v.status.agents, sel.agents, agentRows);
  const split = splitRows(bodyRows - 6, v.inbox.length, v.conversations.length);
  pages.current = { ...pages.current, agents: agentRows, ...split, list: listRows };

  const agents = h(
    Panel,
    {
      title: `Agents (${v.status.agents.length})${agentsWin.items.length < v.status.agents.length ? ` · ${agentsWin.offset + 1}–${agentsWin.offset + agentsWin.items.length}` : ''}`,
      // not while a search, conversation or message takes the keys (two panes were drawn focused)
      focused: pane === 'agents' && !message && !open && !(search && !search.editing),
      width: leftWidth,
    },
    v.status.agents.length === 0
      ? h(Text, { color: 'gray' }, 'none: svc register')
      : agentsWin.items.map((a, i) =>
          h(
            Text,
            {
              key: a.name,
              wrap: 'truncate',
              inverse: pane === 'agents' && i + agentsWin.offset === sel.agents,
              bold: a.name === v.agent,
            },
            `${a.name === v.agent ? '●' : ' '} ${clip(a.name, inner(leftWidth) - 14)} `,
            h(
              Text,
              { color: a.session === 'connected' ? 'green' : a.session === 'connecting' ? 'yellow' : 'red' },
              a.session,
            ),
          ),
        ),
    v.profile
      ? h(Text, { color: 'gray', wrap: 'truncate' }, clip(`presence: ${v.profile.presence ?? '?'}`, inner(leftWidth)))
      : null,
  );

  /** A panel of the right column: its rows, or a gray line saying why there are none. */
  const listPanel = (title: string, focused: boolean, rows: ReactNode[], empty: string) =>
    h(Panel, { title, focused }, rows.length === 0 ? h(Text, { color: 'gray' }, empty) : rows);
  const messageRows = (messages: ArchivedMessage[], selected = -1) =>
    messages.map((m, i) =>
      h(MessageLine, { key: m.message_id, m, width: inner(rightWidth), selected: i === selected }),
    );

  /**
   * A list of messages with its selection in view; the title says which of how many:
   * `before` are there before the first in the list (a conversation's not read yet), and
   * `count` names them all (`200+` when it is not known how many more there are).
   */
  const selectable = (messages: ArchivedMessage[], at: number, before = 0, count = String(messages.length)) => {
    const win = windowOf(messages, at, listRows);
    return {
      rows: messageRows(win.items, at - win.offset),
      where: messages.length > 1 || before > 0 ? ` · ${before + at + 1}/${count}` : '',
    };
  };

  let right: ReactNode;
  if (message) {
    const { m } = message;
    const who = sender(m);
    // wrapped like the content: the key's fingerprint is there to be compared, whole
    const facts = [
      `from ${m.direction === 'outbound' ? `you (${m.from})` : m.from}${m.direction === 'inbound' ? ` · key ${m.verified?.trust ?? 'not verified'}${m.verified?.key_fingerprint ? ` ${m.verified.key_fingerprint}` : ''}` : ''}`,
      `to ${addressee(m)} · sent ${m.sent_at} · ${m.content_type}`,
      `id ${m.message_id}`,
    ].flatMap((f, i) => wrapLines(f, inner(rightWidth)).map((line) => ({ line, first: i === 0 })));
    const lines = wrapLines(messageText(m), inner(rightWidth));
    const room = Math.max(1, listRows - facts.length - 1);
    Object.assign(pages.current, { message: room, scrollMax: Math.max(0, lines.length - room) });
    const top = Math.min(message.scroll, Math.max(0, lines.length - room));
    const shown = lines.slice(top, top + room);
    const more = lines.length > room ? ` · lines ${top + 1}-${top + shown.length} of ${lines.length}` : '';
    right = h(
      Panel,
      { title: `Message${more} (Esc back)`, focused: true },
      ...facts.map((f, i) => h(Text, { key: `f${i}`, color: f.first ? who.color : 'gray', wrap: 'truncate' }, f.line)),
      h(Text, { key: 'sep', color: 'gray' }, ' '),
      ...shown.map((l, i) => h(Text, { key: `l${top + i}`, wrap: 'truncate' }, l === '' ? ' ' : l)),
    );
  } else if (search && !search.editing) {
    const results = search.results ?? [];
    // as many as asked for (the best matches first): there may be more
    const found = `${results.length}${results.length >= SEARCH_LIMIT ? '+' : ''}`;
    const list = selectable(results, search.sel ?? 0, 0, found);
    right = listPanel(
      `Search “${clip(search.query, 30)}” · ${found} found${list.where} (Esc back)`,
      true,
      list.rows,
      search.results === undefined ? 'Searching…' : 'Nothing found.',
    );
  } else if (open) {
    // the newest `last` read: the conversations list says how many there are in all
    const n = open.messages.length;
    const more = n >= open.last;
    const all = open.total !== undefined && open.total >= n ? open.total : undefined;
    const count = all !== undefined ? String(all) : more ? `${n}+` : String(n);
    const list = selectable(open.messages, open.sel, all !== undefined ? all - n : 0, count);
    right = listPanel(
      `${open.title} · ${count}${list.where}${open.older ? ' · reading older…' : ''} (Esc back)`,
      true,
      list.rows,
      'No messages.',
    );
  } else {
    const out = outOfService(v);
    if (out) {
      // no archive to read: the right column says why in full (the red line below is cut to the width)
      const room = Math.max(1, listRows - 1);
      const lines = wrapLines(out.unusable?.message ?? out.session_error ?? '', inner(rightWidth));
      const shown =
        lines.length > room ? [...lines.slice(0, room - 1), clip(`${lines[room - 1]}…`, inner(rightWidth))] : lines;
      right = h(
        Panel,
        {
          title: `${v.agent} is out of service${out.unusable ? ` (${out.unusable.error})` : ''}`,
          focused: pane !== 'agents',
        },
        ...shown.map((l, i) => h(Text, { key: `u${i}`, wrap: 'truncate' }, l === '' ? ' ' : l)),
      );
    } else {
      const inboxWin = windowOf(v.inbox, sel.inbox, split.inbox);
      const convWin = windowOf(v.conversations, sel.conversations, split.conversations);
      right = h(
        Box,
        { flexDirection: 'column', flexGrow: 1, flexShrink: 1, minWidth: 0 },
        listPanel(
          `Inbox · ${v.inbox.length} unread${shownOf(inboxWin, v.inbox.length)}`,
          pane === 'inbox',
          messageRows(inboxWin.items, pane === 'inbox' ? sel.inbox - inboxWin.offset : -1),
          'No unread messages.',
        ),
        listPanel(
          `Conversations · ${v.conversations.length}${shownOf(convWin, v.conversations.length)}`,
          pane === 'conversations',
          convWin.items.map((c, i) =>
            h(ConversationLine, {
              key: c.conversation_id,
              c,
              width: inner(rightWidth),
              selected: pane === 'conversations' && i + convWin.offset === sel.conversations,
            }),
          ),
          'No conversations yet.',
        ),
      );
    }
  }

  return h(
    Box,
    { flexDirection: 'column' },
    header,
    h(Box, { flexDirection: 'row' }, agents, right),
    h(StatusLines, { view: v, width: columns }),
    error ? h(Text, { color: 'red', wrap: 'truncate' }, clip(error, columns)) : null,
    footer,
  );
}
