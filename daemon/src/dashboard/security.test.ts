import { describe, expect, it } from 'vitest';
import { apiAllowed, PAGE_METHODS } from './allowlist.js';
import {
  cookieValue,
  hostAllowed,
  isLoopbackHost,
  isStateChanging,
  originAllowed,
  pageKeyOf,
  sessionCookie,
  sessionCookieName,
} from './security.js';
import { DashboardSessions } from './sessions.js';

describe('loopback hosts', () => {
  it.each(['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]'])('%s is loopback', (h) => {
    expect(isLoopbackHost(h)).toBe(true);
  });
  it.each([
    '0.0.0.0',
    '::',
    '10.0.0.1',
    '192.168.1.2',
    '127.0.0.256',
    '127.0.0.1.nip.io',
    'localhost.evil',
    'evil',
    '',
  ])('%s is not', (h) => {
    expect(isLoopbackHost(h)).toBe(false);
  });
});

describe('Host header (DNS rebinding)', () => {
  it('accepts the loopback names with the port only', () => {
    for (const h of ['127.0.0.1:8191', 'localhost:8191', '[::1]:8191', 'LOCALHOST:8191'])
      expect(hostAllowed(h, 8191, '127.0.0.1'), h).toBe(true);
    for (const h of [
      undefined,
      '',
      '127.0.0.1',
      '127.0.0.1:8192',
      'evil.example:8191',
      '127.0.0.1.nip.io:8191',
      '127.0.0.1:8191.evil',
    ])
      expect(hostAllowed(h, 8191, '127.0.0.1'), String(h)).toBe(false);
  });
});

describe('Origin', () => {
  it('must be the dashboard itself: http, a loopback name, the port', () => {
    expect(originAllowed('http://127.0.0.1:8191', 8191, '127.0.0.1')).toBe(true);
    expect(originAllowed('http://localhost:8191', 8191, '127.0.0.1')).toBe(true);
    for (const o of [
      undefined,
      'null',
      'https://127.0.0.1:8191',
      'http://127.0.0.1:8192',
      'http://evil.example',
      'http://127.0.0.1:8191.evil.example',
      'http://user@127.0.0.1:8191',
      'http://127.0.0.1:8191/path',
    ])
      expect(originAllowed(o, 8191, '127.0.0.1'), String(o)).toBe(false);
  });
  it('is required for every method but GET and HEAD', () => {
    expect(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].every(isStateChanging)).toBe(true);
    expect(['GET', 'HEAD'].some(isStateChanging)).toBe(false);
  });
});

describe('session cookie', () => {
  it('is HttpOnly and SameSite=Strict, named for its port, and is read back from a Cookie header', () => {
    expect(sessionCookie(8191, 'abc')).toBe('svc_dashboard_8191=abc; Path=/; HttpOnly; SameSite=Strict');
    expect(cookieValue('a=1; svc_dashboard_8191=abc; b=2', sessionCookieName(8191))).toBe('abc');
    expect(cookieValue('svc_dashboard_8192=abc', sessionCookieName(8191))).toBeUndefined();
    expect(cookieValue('xsvc_dashboard_8191=abc', sessionCookieName(8191))).toBeUndefined();
    expect(cookieValue(undefined, sessionCookieName(8191))).toBeUndefined();
  });

  it('the page key comes in its header, or as a parameter of the event stream only', () => {
    expect(pageKeyOf('/api/v1/status', 'k1')).toBe('k1');
    expect(pageKeyOf('/api/events?key=k2', undefined)).toBe('k2');
    expect(pageKeyOf('/api/v1/status?key=k2', undefined)).toBeUndefined();
    expect(pageKeyOf('/api/events', undefined)).toBeUndefined();
    expect(pageKeyOf('/api/v1/status', ['a', 'b'])).toBeUndefined();
  });
});

describe('DashboardSessions', () => {
  it('redeems a launch token once, within its life, for a session that lapses when idle', () => {
    let now = 1_000_000;
    const s = new DashboardSessions({ tokenTtlMs: 1000, sessionIdleMs: 5000, now: () => now });
    const token = s.mintToken();
    const signed = s.redeem(token)!;
    expect(signed.session).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signed.pageKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(s.redeem(token)).toBeUndefined(); // once
    expect(s.valid(signed.session, signed.pageKey)).toBe(true);
    // the cookie alone, or with another session's key, is not a session
    const second = s.redeem(s.mintToken())!;
    expect(s.valid(signed.session, undefined)).toBe(false);
    expect(s.valid(signed.session, second.pageKey)).toBe(false);
    expect(s.valid(second.session, signed.pageKey)).toBe(false);
    now += 4000;
    expect(s.valid(signed.session, signed.pageKey)).toBe(true); // use keeps it alive
    now += 5001;
    expect(s.valid(signed.session, signed.pageKey)).toBe(false);
    const late = s.mintToken();
    now += 1001;
    expect(s.redeem(late)).toBeUndefined(); // expired
    expect(s.redeem(undefined)).toBeUndefined();
    expect(s.valid('made-up', 'made-up')).toBe(false);
    expect(s.valid(token, token)).toBe(false); // a token is not a session
  });
});

describe('what the page may call', () => {
  it('reads, sends, replies, acks, searches and accepts keys; nothing that yields a credential', () => {
    expect(apiAllowed('GET', '/v1/agents/bob/inbox')).toBe(true);
    expect(apiAllowed('POST', '/v1/agents/bob/reply')).toBe(true);
    expect(apiAllowed('POST', '/v1/agents/bob/peers/alice/accept-key')).toBe(true);
    for (const [m, p] of [
      ['POST', '/v1/agents/bob/token'],
      ['POST', '/v1/agents/bob/keys/generate'],
      ['POST', '/v1/agents/register'],
      ['DELETE', '/v1/agents/bob'],
      ['POST', '/v1/shutdown'],
      ['POST', '/v1/deployments/add'],
      ['POST', '/v1/dashboard'],
      ['GET', '/v1/agents/bob/inbox/../token'],
      ['GET', '/v1/events'],
    ])
      expect(apiAllowed(m!, p!), `${m} ${p}`).toBe(false);
  });
  it('on the relay: the named operations for the profile, contacts, block and mute; no generic relay call', () => {
    for (const [m, p] of [
      ['GET', '/v1/agents/bob/profile'],
      ['GET', '/v1/agents/bob/contacts'],
      ['GET', '/v1/agents/bob/blocked'],
      ['GET', '/v1/agents/bob/muted'],
      ['POST', '/v1/agents/bob/peers/alice/block'],
      ['DELETE', '/v1/agents/bob/peers/alice/block'],
      ['POST', '/v1/agents/bob/peers/alice/mute'],
      ['DELETE', '/v1/agents/bob/peers/alice/mute'],
    ])
      expect(apiAllowed(m!, p!), `${m} ${p}`).toBe(true);
    for (const [m, p] of [
      ['POST', '/v1/agents/bob/relay'],
      ['PATCH', '/v1/agents/bob/profile'],
      ['POST', '/v1/agents/bob/contacts'],
      ['DELETE', '/v1/agents/bob/contacts/alice'],
      ['POST', '/v1/agents/bob/peers/alice/report'],
      ['DELETE', '/v1/agents/bob/peers/alice/../../../bob'],
      ['DELETE', '/v1/deployments/dev'],
    ])
      expect(apiAllowed(m!, p!), `${m} ${p}`).toBe(false);
  });
  it('the page server forwards GET, POST and DELETE only', () => {
    expect([...PAGE_METHODS].sort()).toEqual(['DELETE', 'GET', 'POST']);
  });
});
