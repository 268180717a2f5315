/**
 * One webhook POST. The relay resolves the host itself, checks every address against the
 * address policy, and connects to the address it checked (no second look-up that a
 * rebinding name could answer differently). TLS still verifies the certificate for the
 * URL's host name, sent as SNI and Host. Redirects are not followed. One deadline covers
 * look-up, connection, TLS and the response status line.
 */
import { request } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { rootCertificates } from 'node:tls';
import { AddressRefusedError, bareHost, type Lookup, type ResolvedAddress, resolveAllowed } from './address-policy.js';

export type PostOutcome =
  | { kind: 'answered'; status: number }
  | { kind: 'timeout' }
  | { kind: 'network'; error: string }
  | { kind: 'refused'; error: string }
  | { kind: 'aborted' };

export interface PostOptions {
  url: string;
  body: Buffer;
  headers: Record<string, string>;
  allowPrivate: boolean;
  /** extra CA (PEM) trusted besides the system roots */
  caPem?: string | undefined;
  lookup?: Lookup | undefined;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

class DeadlineError extends Error {}

/** A `lookup` for the socket that answers with the already checked address only. */
function pinned(address: ResolvedAddress): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: address.address, family: address.family }]);
    else callback(null, address.address, address.family);
  }) as LookupFunction;
}

export async function postWebhook(opts: PostOptions): Promise<PostOutcome> {
  if (opts.signal?.aborted) return { kind: 'aborted' };
  const url = new URL(opts.url);
  if (url.protocol !== 'https:') return { kind: 'refused', error: 'endpoint_url is not https' };
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DeadlineError('webhook deadline'));
  }, opts.timeoutMs);
  const onAbort = () => controller.abort(opts.signal?.reason);
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const outcomeOf = (err: unknown): PostOutcome => {
    if (timedOut) return { kind: 'timeout' };
    if (opts.signal?.aborted) return { kind: 'aborted' };
    if (err instanceof AddressRefusedError) return { kind: 'refused', error: err.message };
    return { kind: 'network', error: (err as Error).message };
  };
  try {
    const host = bareHost(url.hostname);
    const addresses = await Promise.race([
      resolveAllowed(host, { allowPrivate: opts.allowPrivate, lookup: opts.lookup }),
      new Promise<never>((_, reject) =>
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }),
      ),
    ]);
    const address = addresses[0] as ResolvedAddress;
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({
        method: 'POST',
        hostname: host,
        port: url.port === '' ? 443 : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers: {
          ...opts.headers,
          host: url.host,
          'content-length': String(opts.body.length),
          'user-agent': 'svc-relay-webhooks',
        },
        agent: false,
        lookup: pinned(address),
        ...(isIP(host) === 0 ? { servername: host } : {}),
        ...(opts.caPem ? { ca: [...rootCertificates, opts.caPem] } : {}),
        signal: controller.signal,
      });
      req.once('error', reject);
      req.once('response', (res) => {
        resolve(res.statusCode ?? 0);
        // The answer's body is not used; read it briefly, then let the connection go.
        res.resume();
        const drop = setTimeout(() => res.destroy(), 1000);
        drop.unref();
        res.once('close', () => clearTimeout(drop));
        res.once('error', () => undefined);
      });
      req.end(opts.body);
    });
    return { kind: 'answered', status };
  } catch (err) {
    return outcomeOf(err);
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}
