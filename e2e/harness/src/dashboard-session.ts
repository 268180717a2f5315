/**
 * Signing in to a daemon's dashboard as the page does, without a browser: the one-time
 * link answers the session cookie and, in its redirect's fragment, the page key; an API
 * call needs both (`headers`).
 */
export interface DashboardSession {
  /** `svc_dashboard_<port>=…`, as a Cookie header */
  cookie: string;
  /** the session id alone */
  session: string;
  pageKey: string;
  /** Cookie and page key headers for an API call */
  headers: { cookie: string; 'x-svc-page-key': string };
}

export async function signInDashboard(launchUrl: string): Promise<DashboardSession> {
  const res = await fetch(launchUrl, { redirect: 'manual' });
  const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const pageKey = /#key=([A-Za-z0-9_-]+)$/.exec(res.headers.get('location') ?? '')?.[1];
  if (res.status !== 303 || !cookie || !pageKey) {
    throw new Error(`dashboard sign-in failed: ${res.status} ${res.headers.get('location')}`);
  }
  return {
    cookie,
    session: cookie.slice(cookie.indexOf('=') + 1),
    pageKey,
    headers: { cookie, 'x-svc-page-key': pageKey },
  };
}
