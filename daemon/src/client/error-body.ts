/**
 * The `{error, message}` of a failed answer (daemon or relay), with a fallback naming who
 * answered. One function for the daemon's client, the dashboard page and the daemon's
 * relay calls; it imports nothing, so the page's bundle stays small.
 */
export function errorOfBody(body: unknown, status: number, who: string): { code: string; message: string } {
  const e = body as { error?: unknown; message?: unknown } | null | undefined;
  return {
    code: typeof e?.error === 'string' ? e.error : 'internal_error',
    message: typeof e?.message === 'string' ? e.message : `${who} answered ${status}.`,
  };
}
