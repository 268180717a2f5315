/**
 * What the dashboard page may ask the daemon: the operations of the socket API it uses,
 * named from the one contract (client/api.ts), and nothing more. Reading, sending,
 * replying, acknowledging, searching, accepting a peer key, and on the relay: the
 * profile, contacts and the block/mute lists. Nothing that hands out a credential
 * (tokens), changes identities (register, deregister, key rotation, profile), trusts a
 * deployment or stops the daemon.
 */
import { DAEMON_API, type DaemonApiName } from '../client/api.js';

export const PAGE_OPERATIONS = [
  'status',
  'listDeployments',
  'listAgents',
  'getAgent',
  'keys',
  'acceptPeerKey',
  'send',
  'reply',
  'inbox',
  'conversations',
  'read',
  'ack',
  'search',
  'sync',
  'profile',
  'contacts',
  'blocked',
  'muted',
  'block',
  'unblock',
  'mute',
  'unmute',
] as const satisfies readonly DaemonApiName[];

const SEG = '[^/?#]+';
const ALLOWED = PAGE_OPERATIONS.map((name) => {
  const { method, path } = DAEMON_API[name];
  return { method, re: new RegExp(`^${path.replace(/:[a-z]+/g, SEG)}$`) };
});

/** The methods the page server forwards at all. */
export const PAGE_METHODS = [...new Set(ALLOWED.map((a) => a.method))];

/** Whether the page may make this socket API call (`path` without the query). */
export function apiAllowed(method: string, path: string): boolean {
  const m = method.toUpperCase();
  return !path.includes('..') && ALLOWED.some((a) => a.method === m && a.re.test(path));
}

/**
 * Whether the page may send this body: never a `file_path`. The daemon reads such a path
 * with the owner's rights and sends the file; a page in a browser never knows a path, so
 * only someone driving a session (one that leaked) would name one, say ~/.ssh/id_ed25519.
 */
export function bodyAllowed(body: unknown): boolean {
  return !(typeof body === 'object' && body !== null && 'file_path' in body);
}
