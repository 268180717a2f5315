// Bytes as the send-body scan's text (Node: Buffer).
import type { ScanText } from '../envelope/format.js';

/**
 * A body's bytes as scanCanonicalEnvelopes' latin1 text: byte offsets are text offsets,
 * and only each envelope becomes a string (the whole body as one string was a large
 * allocation per request in the relay).
 */
export function latin1Text(raw: Buffer): ScanText {
  return {
    length: raw.length,
    charCodeAt: (index) => raw[index] ?? Number.NaN,
    indexOf: (search, position) => raw.indexOf(search, position, 'latin1'),
    slice: (start, end) => raw.toString('latin1', start, end),
  };
}
