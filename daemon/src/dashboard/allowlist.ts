/**
 * What the dashboard page may ask the daemon. The page reaches the socket API through
 * this list only: reading, sending, replying, acknowledging, searching and accepting a
 * peer key. Nothing that hands out a credential (tokens), changes identities
 * (register, deregister, key rotation), trusts a deployment or stops the daemon.
 * Relay calls are limited to the profile, contacts and block/mute lists.
 */

const SEG = '[^/?#]+';
const route = (method: string, path: string): { method: string; re: RegExp } => ({
  method,
  re: new RegExp(`^${path.replaceAll(':x', SEG)}$`),
});

const API_ROUTES = [
  route('GET', '/v1/status'),
  route('GET', '/v1/deployments'),
  route('GET', '/v1/agents'),
  route('GET', '/v1/agents/:x'),
  route('GET', '/v1/agents/:x/keys'),
  route('POST', '/v1/agents/:x/peers/:x/accept-key'),
  route('POST', '/v1/agents/:x/send'),
  route('POST', '/v1/agents/:x/reply'),
  route('GET', '/v1/agents/:x/inbox'),
  route('GET', '/v1/agents/:x/conversations'),
  route('GET', '/v1/agents/:x/conversations/:x/messages'),
  route('POST', '/v1/agents/:x/messages/:x/ack'),
  route('GET', '/v1/agents/:x/search'),
  route('POST', '/v1/agents/:x/sync'),
  route('POST', '/v1/agents/:x/relay'),
];

const RELAY_CALLS = [
  route('GET', '/api/v1/agents/me'),
  route('GET', '/api/v1/agents/me/blocked'),
  route('GET', '/api/v1/agents/me/muted'),
  route('GET', '/api/v1/agents/:x'),
  route('POST', '/api/v1/agents/:x/block'),
  route('DELETE', '/api/v1/agents/:x/block'),
  route('POST', '/api/v1/agents/:x/mute'),
  route('DELETE', '/api/v1/agents/:x/mute'),
  route('GET', '/api/v1/contacts'),
  route('POST', '/api/v1/contacts'),
  route('DELETE', '/api/v1/contacts/:x'),
];

const matches = (list: typeof API_ROUTES, method: string, path: string) =>
  list.some((r) => r.method === method.toUpperCase() && r.re.test(path));

/** Whether the page may make this socket API call (`path` without the query). */
export function apiAllowed(method: string, path: string): boolean {
  return !path.includes('..') && matches(API_ROUTES, method, path);
}

/** Whether the page may make this relay call through POST /v1/agents/:agent/relay. */
export function relayCallAllowed(method: unknown, path: unknown): boolean {
  if (typeof method !== 'string' || typeof path !== 'string') return false;
  const p = `/api/v1/${path.replace(/^\/+/, '').replace(/^api\/v1\//, '')}`;
  return !p.includes('..') && !p.includes('?') && matches(RELAY_CALLS, method, p);
}
