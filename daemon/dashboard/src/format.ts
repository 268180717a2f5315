/** Words the page builds from numbers: how long ago, how many. Pure, so tested without a browser. */

const UNITS: Array<[number, Intl.RelativeTimeFormatUnit]> = [
  [60, 'second'],
  [60, 'minute'],
  [24, 'hour'],
  [30, 'day'],
  [12, 'month'],
  [Number.POSITIVE_INFINITY, 'year'],
];

/** `5 minutes ago`, `in 2 days`; `locale` is the browser's unless a test names one. */
export function relative(iso: string, now = Date.now(), locale?: string): string {
  let delta = (Date.parse(iso) - now) / 1000;
  if (Number.isNaN(delta)) return iso;
  if (Math.abs(delta) < 45) return delta < 0 ? 'just now' : 'in a moment';
  const fmt = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' });
  for (const [size, unit] of UNITS) {
    // rounded first, so that 59.6 seconds is a minute, not "60 seconds"; half away from
    // zero in both directions (Math.round takes -1.5 to -1)
    const n = Math.sign(delta) * Math.round(Math.abs(delta));
    if (Math.abs(n) < size) return fmt.format(n, unit);
    delta /= size;
  }
  return iso;
}

/** `1 message matches`, `3 messages match`. */
export function matchCount(n: number): string {
  return n === 1 ? '1 message matches' : `${n} messages match`;
}
