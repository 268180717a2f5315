/** Small hooks: load-with-state, the live event stream, keyboard shortcuts, the hash route. */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api, type DaemonEvent, pageKey } from './api.js';
import { useShell } from './context.js';

export type Load<T> =
  | { state: 'loading' }
  | { state: 'error'; code: string; message: string }
  | { state: 'ready'; data: T };

/** Runs `fn` when any of `deps` changes; keeps the previous data while reloading. */
export function useLoad<T>(fn: () => Promise<T>, deps: readonly unknown[]): [Load<T>, () => void] {
  const [load, setLoad] = useState<Load<T>>({ state: 'loading' });
  const [again, setAgain] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: deps are the caller's
  useEffect(() => {
    let live = true;
    fn().then(
      (data) => live && setLoad({ state: 'ready', data }),
      (err: { code?: string; message?: string }) =>
        live && setLoad({ state: 'error', code: err.code ?? 'error', message: err.message ?? String(err) }),
    );
    return () => {
      live = false;
    };
  }, [...deps, again]);
  return [load, useCallback(() => setAgain((n) => n + 1), [])];
}

/**
 * The names of groups and broadcasts (from their rosters, as the conversation list shows
 * them) by conversation id: a message carries only the id. One the list lacks is missing.
 */
export function useConversationNames(): ReadonlyMap<string, string> {
  const shell = useShell();
  const [load] = useLoad(() => api.conversations(shell.agent), [shell.agent, shell.rev.messages]);
  return useMemo(
    () =>
      new Map(
        load.state === 'ready'
          ? load.data.flatMap((c): Array<[string, string]> => (c.name ? [[c.conversation_id, c.name]] : []))
          : [],
      ),
    [load],
  );
}

export type LinkState = 'connecting' | 'live' | 'lost';

/** How long the stream may try to reconnect before the daemon counts as lost. */
const LOST_AFTER_MS = 5_000;

/**
 * The daemon's event stream (server-sent events); reconnects on its own. A stream that
 * keeps failing is `lost`: the browser goes on retrying a refused connection for ever
 * (it only gives up on an answer that is no stream), so the page said "reconnecting" and
 * showed what it had, as if nothing were wrong.
 */
export function useEvents(onEvent: (e: DaemonEvent) => void): LinkState {
  const [state, setState] = useState<LinkState>('connecting');
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    let lostTimer: ReturnType<typeof setTimeout> | undefined;
    // an event stream takes no header: the page key goes as a parameter (never logged)
    const source = new EventSource(`/api/events?key=${encodeURIComponent(pageKey())}`);
    source.onopen = () => {
      clearTimeout(lostTimer);
      lostTimer = undefined;
      setState('live');
    };
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) return setState('lost');
      setState((was) => (was === 'lost' ? 'lost' : 'connecting'));
      lostTimer ??= setTimeout(() => setState('lost'), LOST_AFTER_MS);
    };
    source.onmessage = (m) => {
      try {
        handler.current(JSON.parse(m.data) as DaemonEvent);
      } catch {
        // a line that is not an event is skipped
      }
    };
    return () => {
      clearTimeout(lostTimer);
      source.close();
    };
  }, []);
  return state;
}

const typing = (t: EventTarget | null) =>
  t instanceof HTMLElement && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName));

/** Single-key shortcuts, ignored while typing (Escape always works). */
export function useShortcuts(map: Record<string, () => void>): void {
  const ref = useRef(map);
  ref.current = map;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key !== 'Escape' && typing(e.target)) return;
      // Escape leaves a text field, so that the next key is a shortcut again, not text
      if (e.key === 'Escape' && typing(e.target)) (e.target as HTMLElement).blur();
      const fn = ref.current[e.key];
      if (fn) {
        e.preventDefault();
        fn();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}

/** `#/view/arg` → ['view', 'arg'] */
export function useRoute(): [string[], (path: string) => void] {
  const [route, setRoute] = useState(readRoute);
  useEffect(() => {
    const on = () => setRoute(readRoute());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  const go = useCallback((path: string) => {
    window.location.hash = `#/${path}`;
  }, []);
  return [route, go];
}

/** A segment as written when it is not valid percent-encoding: any page may link here with any hash. */
function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function readRoute(): string[] {
  return window.location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeSegment);
}
