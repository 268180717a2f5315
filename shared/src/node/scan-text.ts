// Bytes as the send-body scan's text (Node: Buffer).
import type { ScanText } from '../envelope/format.js';

/** Where decodedLength decodes a text of up to SCRATCH_BYTES decoded bytes; a longer one gets a buffer of its own. */
const SCRATCH_BYTES = 64 * 1024;
const scratch = Buffer.allocUnsafe(SCRATCH_BYTES);

/**
 * How many bytes `text` decodes to as base64url. Node's decoder skips every character
 * outside the base64 and base64url alphabets, which is what the scan's alphabet check
 * relies on (scan.test.ts checks it for every byte value); it runs several times faster
 * than a character class, and writing into scratch space allocates nothing.
 */
function decodedLength(text: string): number {
  return Math.ceil((text.length * 3) / 4) <= SCRATCH_BYTES
    ? scratch.write(text, 0, 'base64url')
    : Buffer.from(text, 'base64url').length;
}

/**
 * A body's bytes as scanCanonicalEnvelopes' latin1 text: byte offsets are text offsets,
 * and only each envelope becomes a string (the whole body as one string was a large
 * allocation per request in the relay).
 */
export function latin1Text(raw: Buffer): ScanText {
  return {
    length: raw.length,
    charCodeAt: (index) => raw[index] ?? Number.NaN,
    // one character: a byte search (memchr), not a string search
    indexOf: (search, position) =>
      search.length === 1 ? raw.indexOf(search.charCodeAt(0), position) : raw.indexOf(search, position, 'latin1'),
    slice: (start, end) => raw.toString('latin1', start, end),
    decodedLength,
  };
}
