/** UUIDv7 message ids (RFC 9562): 48-bit Unix milliseconds, version 7, 74 random bits. */

export const UUID_V7_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * A maker of UUIDv7 ids (lowercase) whose ids grow (RFC 9562, 6.2, method 1): within one
 * millisecond the 12 bits after the version count up from a random start below 2048, so a
 * sender's ids sort in the order it made them. The relay relies on that for speed, not for
 * correctness: a send whose ids all sort after every id its recipient has is recorded
 * without a look-up (the relay's envelope-batches.ts). Past 4096 ids in one millisecond, or
 * for a time before the last one's (a clock set back, or a test's), the bits are random
 * again. `now` is for tests. Uses crypto.getRandomValues (Node and browsers).
 */
export function messageIdMaker(): (now?: number) => string {
  /** the millisecond of the last id made, and the counter it carried (rand_a) */
  let lastMs = -1;
  let lastCounter = 0;
  return (now: number = Date.now()): string => {
    if (!Number.isSafeInteger(now) || now < 0 || now >= 2 ** 48) throw new RangeError('timestamp out of UUIDv7 range');
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    let counter: number;
    if (now === lastMs && lastCounter < 0xfff) counter = lastCounter + 1;
    else if (now > lastMs) counter = (((b[6] as number) << 8) | (b[7] as number)) & 0x7ff;
    else counter = (((b[6] as number) << 8) | (b[7] as number)) & 0xfff;
    if (now > lastMs || (now === lastMs && counter > lastCounter)) {
      lastMs = now;
      lastCounter = counter;
    }
    let ms = now;
    for (let i = 5; i >= 0; i--) {
      b[i] = ms % 256;
      ms = Math.floor(ms / 256);
    }
    b[6] = 0x70 | (counter >> 8);
    b[7] = counter & 0xff;
    b[8] = 0x80 | ((b[8] as number) & 0x3f);
    let out = '';
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) out += '-';
      out += HEX[b[i] as number];
    }
    return out;
  };
}

/** A new UUIDv7 from this process's maker (messageIdMaker): ids made here grow. */
export const newMessageId: (now?: number) => string = messageIdMaker();

export function isMessageId(value: unknown): value is string {
  return typeof value === 'string' && UUID_V7_PATTERN.test(value);
}

/** The Unix-millisecond timestamp inside a UUIDv7. */
export function messageIdTimestamp(messageId: string): number {
  if (!isMessageId(messageId)) throw new TypeError('not a UUIDv7');
  return Number.parseInt(messageId.slice(0, 8) + messageId.slice(9, 13), 16);
}
