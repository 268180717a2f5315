import { createHash } from 'node:crypto';
import { fromBase64url } from '@svc/shared';

/**
 * A public key (base64url) as two owners read it aloud to compare: SHA-256 of the raw key,
 * its first 128 bits as 8 groups of 4 hex digits. The same in `svc keys status`, the TUI,
 * MCP and the dashboard (which computes it in the page).
 */
export function keyFingerprint(publicKey: string): string {
  const hex = createHash('sha256').update(fromBase64url(publicKey)).digest('hex').slice(0, 32);
  return hex.match(/.{4}/g)!.join(':');
}
