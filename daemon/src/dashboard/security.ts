/**
 * The dashboard's request checks, as pure functions so each rule has its own unit test.
 * The page is served on loopback only; a request is the page's own when its Host names the
 * loopback address and port it was opened on (a rebound DNS name is refused), its Origin
 * (when the browser sends one, and always for a state change) is that same origin, and it
 * carries the session cookie the per-launch token was exchanged for.
 */

/** The names a loopback listener answers to (Host header and Origin). */
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

export { isLoopbackHost } from '../client/loopback.js';

/** The address to bind for a loopback host name (localhost binds the IPv4 loopback). */
export function bindAddress(host: string): string {
  const h = host.trim().toLowerCase();
  if (h === 'localhost') return '127.0.0.1';
  if (h === '[::1]') return '::1';
  return h;
}

/** The name a URL uses for a bound loopback address. */
export function urlHost(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

/**
 * The Host header must be a loopback name with the dashboard's port. A DNS-rebinding page
 * (evil.example resolving to 127.0.0.1) sends its own name and is refused.
 */
export function hostAllowed(hostHeader: string | undefined, port: number, boundHost: string): boolean {
  if (!hostHeader) return false;
  const h = hostHeader.trim().toLowerCase();
  const names = new Set(LOOPBACK_NAMES);
  names.add(urlHost(boundHost));
  for (const name of names) if (h === `${name}:${port}`) return true;
  return false;
}

/** The Origin must be the dashboard's own: http, a loopback name, its port. */
export function originAllowed(origin: string | undefined, port: number, boundHost: string): boolean {
  if (!origin) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' || url.pathname !== '/' || url.username || url.password) return false;
  if (origin.replace(/\/$/, '') !== `${url.protocol}//${url.host}`) return false;
  return hostAllowed(url.host, port, boundHost);
}

/** Methods that change state: they always need a matching Origin. */
export function isStateChanging(method: string): boolean {
  return !['GET', 'HEAD'].includes(method.toUpperCase());
}

/** One cookie's value from a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The session cookie's name, one per port: a browser keeps one cookie jar for every port
 * of a host, and two daemons' dashboards (two SVC_HOMEs) would sign each other out.
 */
export const sessionCookieName = (port: number): string => `svc_dashboard_${port}`;

/** Set-Cookie for a session: script cannot read it, no other site sends it. */
export function sessionCookie(port: number, value: string): string {
  return `${sessionCookieName(port)}=${value}; Path=/; HttpOnly; SameSite=Strict`;
}

/** The header the page sends its page key in (the event stream, which takes no header: `?key=`). */
export const PAGE_KEY_HEADER = 'x-svc-page-key';

/** The page key of a request: its header, or for the event stream its `key` query parameter. */
export function pageKeyOf(url: string, header: string | string[] | undefined): string | undefined {
  if (typeof header === 'string') return header;
  const [path, query] = url.split('?', 2);
  if (path !== '/api/events' || query === undefined) return undefined;
  return new URLSearchParams(query).get('key') ?? undefined;
}

/**
 * Scripts, styles and connections only from the dashboard itself; nothing inline, no
 * frames, no plugins, no other origin. The page is built so that it needs nothing more.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every dashboard answer. No Access-Control-* header is ever sent (no CORS). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};
