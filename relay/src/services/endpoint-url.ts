/**
 * The rule for webhook endpoint URLs: an absolute https URL without user name or
 * password, at most 2048 characters, whose host is not (and does not resolve to) an
 * address the webhook address policy refuses (src/webhooks/address-policy.ts: loopback,
 * private, link-local, cloud metadata … unless SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS=1).
 * A name that does not resolve yet is accepted: every delivery resolves and checks again.
 */
import { PROFILE_LIMITS, SvcError } from '@svc/shared';
import { AddressRefusedError, type Lookup, resolveAllowed } from '../webhooks/address-policy.js';

export interface EndpointPolicy {
  /** SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS */
  allowPrivate?: boolean;
  /** for tests: the resolver */
  lookup?: Lookup;
}

const refuse = (why: string): never => {
  throw new SvcError('invalid_endpoint_url', `The webhook URL (endpoint_url) ${why}`);
};

/** Checks a non-blank endpoint URL and returns it in its normalized form (WHATWG URL href). */
export async function checkEndpointUrl(raw: string, policy: EndpointPolicy = {}): Promise<string> {
  const text = raw.trim();
  if (text.length > PROFILE_LIMITS.endpointUrl) refuse(`is longer than ${PROFILE_LIMITS.endpointUrl} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return refuse('is not an absolute URL');
  }
  if (url.protocol !== 'https:') refuse('must use https');
  if (url.username !== '' || url.password !== '') refuse('must not carry a user name or password');
  if (url.hostname === '') refuse('must name a host');
  if (url.href.length > PROFILE_LIMITS.endpointUrl) refuse(`is longer than ${PROFILE_LIMITS.endpointUrl} characters`);
  try {
    await resolveAllowed(url.hostname, { allowPrivate: policy.allowPrivate ?? false, lookup: policy.lookup });
  } catch (err) {
    if (err instanceof AddressRefusedError) {
      // only where the setting would change the answer: metadata, reserved and the like never pass
      refuse(
        `is refused: ${err.message}; webhooks go to public addresses only${err.operatorCanAllow ? ' (the operator can allow private ones)' : ''}`,
      );
    }
    // Not resolvable now (DNS not set up yet, resolver down): checked again at each delivery.
  }
  return url.href;
}
