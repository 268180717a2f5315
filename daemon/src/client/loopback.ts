/**
 * Loopback host names, on the client side too: `svc dashboard --host` is refused before the
 * daemon is asked, and the CLI bundle must not pull in the dashboard server's module for it.
 */
/** A host the dashboard may listen on: an IPv4 loopback address, ::1 or localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  if (h === 'localhost' || h === '::1' || h === '[::1]') return true;
  const m = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(h);
  return m?.slice(1).every((part) => Number(part) <= 255) === true;
}
