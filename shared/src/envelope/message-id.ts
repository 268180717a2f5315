/** UUIDv7 message ids (RFC 9562): 48-bit Unix milliseconds, version 7, 74 random bits. */

export const UUID_V7_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A new UUIDv7 (lowercase). `now` is for tests. Uses crypto.getRandomValues (Node and browsers). */
export function newMessageId(now: number = Date.now()): string {
  if (!Number.isSafeInteger(now) || now < 0 || now >= 2 ** 48) throw new RangeError('timestamp out of UUIDv7 range');
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  let ms = now;
  for (let i = 5; i >= 0; i--) {
    b[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  b[6] = 0x70 | ((b[6] as number) & 0x0f);
  b[8] = 0x80 | ((b[8] as number) & 0x3f);
  let out = '';
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out += '-';
    out += HEX[b[i] as number];
  }
  return out;
}

export function isMessageId(value: unknown): value is string {
  return typeof value === 'string' && UUID_V7_PATTERN.test(value);
}

/** The Unix-millisecond timestamp inside a UUIDv7. */
export function messageIdTimestamp(messageId: string): number {
  if (!isMessageId(messageId)) throw new TypeError('not a UUIDv7');
  return Number.parseInt(messageId.slice(0, 8) + messageId.slice(9, 13), 16);
}
