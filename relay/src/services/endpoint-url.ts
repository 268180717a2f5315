/**
 * The rule for webhook endpoint URLs. Today: an absolute https URL without user name or
 * password, at most 2048 characters. Async so that a later check (refusing private and
 * loopback addresses, which may need a DNS look-up) can be added here without touching
 * the callers.
 */
import { PROFILE_LIMITS, SvcError } from '@svc/shared';

const refuse = (why: string): never => {
  throw new SvcError('invalid_endpoint_url', `endpoint_url ${why}`);
};

/** Checks a non-blank endpoint URL and returns it in its normalized form (WHATWG URL href). */
export async function checkEndpointUrl(raw: string): Promise<string> {
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
  return url.href;
}
