import type { KeyBackfill } from './models.js';

/**
 * Why the relay's record of one of our agents cannot be mended from here (svc keys
 * backfill, upload-signing), in words; undefined when it can. Its code: own_key_mismatch.
 */
export function ownKeyMismatch(b: KeyBackfill): string | undefined {
  if (b.state === 'foreign')
    return `The relay publishes for ${b.agent} a signing key its vault does not hold (version ${b.relay_version}); nothing was uploaded. Ask the relay's operator to check it.`;
  if (b.state === 'bad_signature')
    return `The relay publishes the keys of ${b.agent} under a signature that does not verify (version ${b.relay_version}); nothing was uploaded. Ask the relay's operator to check it.`;
  return undefined;
}
