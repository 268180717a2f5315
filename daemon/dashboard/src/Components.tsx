/** Shared pieces: the designed states (loading, empty, error), times, fingerprints, badges. */
import { type ReactNode, useEffect, useState } from 'react';
import { relative } from './format.js';
import type { Load } from './hooks.js';

export function Loading({ what }: { what: string }) {
  return (
    <div className="state state-loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" />
      <span>Loading {what}…</span>
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="state state-empty">
      <div className="state-icon" aria-hidden="true">
        ∅
      </div>
      <h3>{title}</h3>
      {children ? <p>{children}</p> : null}
    </div>
  );
}

export function Failure({ code, message, retry }: { code: string; message: string; retry?: () => void }) {
  return (
    <div className="state state-error" role="alert">
      <div className="state-icon" aria-hidden="true">
        !
      </div>
      <h3>Could not load this</h3>
      <p>{message}</p>
      <p className="muted mono">{code}</p>
      {retry ? (
        <button type="button" onClick={retry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

/** Renders a Load: the loading and error states, or `children(data)`. */
export function Loaded<T>({
  load,
  what,
  retry,
  children,
}: {
  load: Load<T>;
  what: string;
  retry?: () => void;
  children: (data: T) => ReactNode;
}) {
  if (load.state === 'loading') return <Loading what={what} />;
  if (load.state === 'error') return <Failure code={load.code} message={load.message} {...(retry ? { retry } : {})} />;
  return <>{children(load.data)}</>;
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={new Date(iso).toLocaleString()}>
      {relative(iso)}
    </time>
  );
}

function b64urlBytes(s: string): Uint8Array<ArrayBuffer> {
  const b = atob(
    s
      .replace(/-/g, '+')
      .replace(/_/g, '/')
      .padEnd(Math.ceil(s.length / 4) * 4, '='),
  );
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

/** SHA-256 of the public key, first 16 bytes in groups: what two owners read aloud to compare. */
export function Fingerprint({ publicKey }: { publicKey: string }) {
  const [fp, setFp] = useState<string>('');
  useEffect(() => {
    let live = true;
    let bytes: Uint8Array<ArrayBuffer>;
    try {
      bytes = b64urlBytes(publicKey);
    } catch {
      setFp('(not a key)');
      return;
    }
    crypto.subtle.digest('SHA-256', bytes).then((d) => {
      const hex = [...new Uint8Array(d).slice(0, 16)].map((x) => x.toString(16).padStart(2, '0')).join('');
      // grouped as svc keys status, the TUI and MCP show it
      if (live) setFp(hex.match(/.{4}/g)?.join(':') ?? hex);
    });
    return () => {
      live = false;
    };
  }, [publicKey]);
  // a narrow window breaks it between groups, never inside one
  const shown = fp
    ? // biome-ignore lint/suspicious/noArrayIndexKey: a group's place is its identity
      fp.split(':').flatMap((g, i) => (i === 0 ? [g] : [':', <wbr key={i} />, g]))
    : '…';
  return (
    <code className="fingerprint" title={publicKey}>
      {shown}
    </code>
  );
}

export function Dot({ tone, label }: { tone: 'ok' | 'warn' | 'bad' | 'idle'; label: string }) {
  return (
    <span className={`dot-label tone-${tone}`}>
      <span className="dot" aria-hidden="true" />
      {label}
    </span>
  );
}

export function Badge({ children, tone = 'idle' }: { children: ReactNode; tone?: 'ok' | 'warn' | 'bad' | 'idle' }) {
  return <span className={`badge tone-${tone}`}>{children}</span>;
}

export function ViewHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <header className="view-header">
      <h2>{title}</h2>
      {children ? <div className="view-actions">{children}</div> : null}
    </header>
  );
}

export function Kbd({ children }: { children: ReactNode }) {
  return <kbd>{children}</kbd>;
}
