/**
 * The dashboard page in real Chromium against two daemons on a REAL relay process: bob's
 * owner opens the page with the one-time link, sees alice's message arrive live, replies
 * (alice's daemon receives it), acknowledges, searches, is warned of alice's changed key
 * and accepts it. Requests with a foreign Host or Origin, or without the session, are
 * refused. Screenshots of every view, light and dark, go to .tmp/dashboard-screenshots
 * (and to docs/screenshots with SVC_UPDATE_SCREENSHOTS=1).
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type DaemonEvent, type DashboardLaunch, keyFingerprint } from '@svc/daemon/client';
import { until } from '@svc/test-harness';
import { postSealedAs, relayAs, rotateSigningKeyBehindDaemon } from '@svc/test-harness/as-agent';
import { haveChromium, launchBrowser } from '@svc/test-harness/browser';
import { startDaemon, type TestDaemon, tempHome } from '@svc/test-harness/daemon';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { type RelayProcess, runRelayCli } from '@svc/test-harness/relay-process';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHOTS = join(ROOT, '.tmp', 'dashboard-screenshots');
const DOCS_SHOTS = join(ROOT, 'docs', 'screenshots');

let stage: DaemonsOnRelay<'alice' | 'bob'>;
let relay: RelayProcess;
let a: TestDaemon; // alice
let b: TestDaemon; // bob: the owner at the dashboard
let browser: BrowserContext;
let page: Page;
let launch: DashboardLaunch;
let aliceEvents: DaemonEvent[];

/** A raw HTTP request, so Host, Origin and Cookie are exactly what the test says. */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    // a body always with its length: Node sends a DELETE's body without one otherwise
    const length = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
    const options = { host: '127.0.0.1', port: launch.port, method, path, headers: { ...headers, ...length } };
    const req = httpRequest({ ...options, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => {
        text += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.once('error', reject);
    req.end(body);
  });
}

async function shot(name: string): Promise<void> {
  // nothing may stick out sideways: a wider document than the window means something overflows
  const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
  expect(overflow, `${name}: page wider than the window`).toBeLessThanOrEqual(0);
  await page.mouse.move(1, 700); // no hover left over from the last click
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const file = join(SHOTS, `${name}-${scheme}.png`);
    await page.screenshot({ path: file });
    if (process.env.SVC_UPDATE_SCREENSHOTS === '1') copyFileSync(file, join(DOCS_SHOTS, `${name}-${scheme}.png`));
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

/** Elements of the page's main area that reach past the window's right edge. */
async function beyondRightEdge(): Promise<string[]> {
  return (await page.evaluate(
    `[...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1).map((e) => e.outerHTML.slice(0, 160))`,
  )) as string[];
}

/** A screenshot for a person to look at (not for the docs): .tmp/dashboard-screenshots. */
async function look(name: string): Promise<void> {
  await page.mouse.move(1, 700);
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

async function view(hash: string, heading: string | RegExp): Promise<void> {
  await page.evaluate(`window.location.hash = ${JSON.stringify(hash)}`);
  await page.getByRole('heading', { name: heading, level: 2 }).first().waitFor();
}

describe.skipIf(!haveChromium)('the dashboard in Chromium', () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    if (process.env.SVC_UPDATE_SCREENSHOTS === '1') mkdirSync(DOCS_SHOTS, { recursive: true });
    [stage, browser] = await Promise.all([startDaemonsOnRelay({ agents: ['alice', 'bob'] }), launchBrowser()]);
    relay = stage.relay;
    ({ alice: a, bob: b } = stage.daemons);
    aliceEvents = stage.events.alice;
    launch = await b.client.openDashboard({ port: 0 });
    page = browser.pages()[0] ?? (await browser.newPage());
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stage?.close();
  });

  it('signs in with the one-time link, which then leaves the address bar and works no more', async () => {
    expect(launch.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/auth\?token=[A-Za-z0-9_-]{43}$/);
    await page.goto(launch.url);
    expect(page.url()).toBe(`${launch.base_url}/`);
    await page.getByRole('heading', { name: 'Inbox zero' }).waitFor();
    const cookie = (await browser.cookies(launch.base_url)).find((c) => c.name === `svc_dashboard_${launch.port}`);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    // the page key, from the redirect's fragment, is in this origin's storage and out of the address bar
    expect((await page.evaluate("localStorage.getItem('svc.dashboard.page-key')")) as string | null).toMatch(
      /^[A-Za-z0-9_-]{43}$/,
    );
    // the link was for one use
    const again = await raw('GET', new URL(launch.url).pathname + new URL(launch.url).search, {
      host: `127.0.0.1:${launch.port}`,
    });
    expect(again.status).toBe(401);
    await shot('inbox-empty');
    await page.getByRole('button', { name: 'Sync' }).click();
    await page.getByText('Up to date.').waitFor();
    await view('#/conversations', 'Conversations');
    await page.getByRole('heading', { name: 'No conversations yet' }).waitFor();
    await shot('conversations-empty');
    await view('#/contacts', 'Contacts');
    await page.getByRole('heading', { name: 'No contacts yet' }).waitFor();
    await shot('contacts-empty');
    await view('#/relations', 'Blocked and muted');
    await page.getByRole('heading', { name: 'Nobody is muted' }).waitFor();
    await shot('relations-empty');
    await view('#/webhook', 'Webhook');
    await page.getByRole('heading', { name: 'No webhook set' }).waitFor();
    await shot('webhook');
    await view('#/search', 'Search');
    await shot('search-idle');
  });

  it('shows an arriving message live, and the reply written there reaches the sender', async () => {
    await view('#/inbox', 'Inbox');
    const sent = await a.client.send('alice', { to: 'bob', content: 'the quarterly numbers are ready for review' });
    // no reload: the event stream brings it in
    const item = page.locator(`[data-message-id="${sent.message_id}"]`);
    await item.getByText('the quarterly numbers are ready for review').waitFor();
    await until(async () => (await page.title()) === '(1) svc dashboard', 10_000, 'the unread count in the title');
    await shot('inbox');

    await item.getByRole('button', { name: 'Reply' }).click();
    await item.getByRole('textbox', { name: 'Reply to alice' }).fill('thanks, looking at them now');
    await item.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Reply sent to alice.').waitFor();
    const got = await until(
      () =>
        aliceEvents.find(
          (e) =>
            e.type === 'message' &&
            e.message.direction === 'inbound' &&
            e.message.content === 'thanks, looking at them now',
        ),
      15_000,
      'alice receives the reply',
    );
    expect(got).toMatchObject({ agent: 'alice', message: { from: 'bob', conversation_id: 'dm:alice:bob' } });
  });

  it('acknowledges from the inbox; the conversation view shows both sides', async () => {
    const [waiting] = await b.client.inbox('bob', { source: 'local' });
    expect(waiting).toBeDefined();
    const item = page.locator(`[data-message-id="${waiting!.message_id}"]`);
    await item.getByRole('button', { name: 'Acknowledge' }).click();
    await page.getByRole('heading', { name: 'Inbox zero' }).waitFor();
    expect((await b.client.inbox('bob', { source: 'local' })).map((m) => m.message_id)).not.toContain(
      waiting!.message_id,
    );
    await view('#/conversations/dm:alice:bob', 'With alice');
    await page.getByTestId('thread').getByText('thanks, looking at them now').waitFor();
    await shot('conversation');
  });

  it('composes a new message to an agent by number', async () => {
    await view('#/compose', 'New message');
    await page.getByLabel('To (agent number)').fill('alice');
    await page.getByRole('textbox', { name: 'Message' }).fill('one more thing: the budget sheet');
    await page.getByRole('textbox', { name: 'Message' }).press('Control+Enter');
    await page.getByRole('status').getByText('Sent').waitFor();
    await until(
      () => aliceEvents.find((e) => e.type === 'message' && e.message.content === 'one more thing: the budget sheet'),
      15_000,
      'alice receives the new message',
    );
    await shot('compose');
  });

  it('searches the archive', async () => {
    await view('#/search', 'Search');
    await page.getByRole('searchbox', { name: 'Search messages' }).fill('quarterly');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = page.getByTestId('search-results');
    await results.getByText('the quarterly numbers are ready for review').waitFor();
    await expect(results.locator('[data-message-id]').count()).resolves.toBe(1);
    await results.getByText('1 message matches “quarterly”').waitFor();
    await shot('search');
    await page.getByRole('searchbox', { name: 'Search messages' }).fill('zeppelin');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('heading', { name: 'Nothing matches “zeppelin”' }).waitFor();
  });

  it('warns prominently of a changed peer key, and accepting it releases the held message', async () => {
    await view('#/inbox', 'Inbox');
    const { signPrivate } = await rotateSigningKeyBehindDaemon(a, 'alice');
    const { header, status } = await postSealedAs(a, 'alice', 'bob', 'signed with my new key', signPrivate);
    expect(status).toBe(202);
    // live: the banner appears on whatever view is open
    await page.getByRole('alert').getByText('The key of alice changed.').waitFor();
    await shot('key-warning-banner');
    await page.getByRole('button', { name: 'Review keys' }).click();
    const warning = page.getByTestId('key-warning-alice');
    await warning.waitFor();
    await shot('keys-warning');
    expect((await b.client.read('bob', 'alice')).map((m) => m.message_id)).not.toContain(header.message_id);
    await warning.getByRole('button', { name: 'Accept new key…' }).click();
    await warning.getByRole('button', { name: 'I compared it: trust the new key' }).click();
    await warning.waitFor({ state: 'detached' });
    const peer = (await b.client.keys('bob')).peers.find((p) => p.agent_number === 'alice');
    expect(peer?.changed).toBeUndefined();
    await view('#/inbox', 'Inbox');
    await page.locator(`[data-message-id="${header.message_id}"]`).getByText('signed with my new key').waitFor();
    await view('#/keys', 'Keys');
    await page.getByText('pinned', { exact: true }).first().waitFor();
    // the fingerprint the page computes is the one svc keys status, the TUI and MCP show
    await page.getByText(keyFingerprint(peer!.signing_public_key), { exact: true }).first().waitFor();
    await shot('keys');
  });

  it('shows contacts; blocks, mutes, unblocks and unmutes on the relay; shows agents and deployment trust', async () => {
    await b.client.saveContact('bob', { agent_number: 'alice', alias: 'Alice (finance)', notes: 'quarterly reports' });
    await view('#/contacts', 'Contacts');
    await page.getByText('Alice (finance)').waitFor();
    await shot('contacts');
    // the relay keeps the lists: ask it, past the daemon
    const onRelay = async () => ({
      blocked: (await relayAs<{ blocked: { agent_number: string }[] }>(b, 'bob', 'GET', 'agents/me/blocked')).body
        .blocked,
      muted: (await relayAs<{ muted: { agent_number: string }[] }>(b, 'bob', 'GET', 'agents/me/muted')).body.muted,
    });
    await view('#/relations', 'Blocked and muted');
    for (const [relation, button, toast] of [
      ['block', 'Block', 'Blocked alice.'],
      ['mute', 'Mute', 'Muted alice.'],
    ] as const) {
      await page.getByLabel(`Agent number to ${relation}`).fill('alice');
      await page.getByRole('button', { name: button, exact: true }).click();
      await page.getByText(toast).waitFor();
    }
    await page.getByRole('button', { name: 'Unblock' }).waitFor();
    await page.getByRole('button', { name: 'Unmute' }).waitFor();
    expect(await onRelay()).toMatchObject({ blocked: [{ agent_number: 'alice' }], muted: [{ agent_number: 'alice' }] });
    await shot('relations');
    await page.getByRole('button', { name: 'Unblock' }).click();
    await page.getByRole('heading', { name: 'Nobody is blocked' }).waitFor();
    await page.getByRole('button', { name: 'Unmute' }).click();
    await page.getByRole('heading', { name: 'Nobody is muted' }).waitFor();
    expect(await onRelay()).toEqual({ blocked: [], muted: [] });
    await view('#/agents', 'Agents');
    await page.getByTestId('agent-bob').getByText('connected').waitFor();
    await shot('agents');
    await view('#/deployment', 'Deployment trust');
    await page.getByTestId('deployment-dev').getByText(relay.url).waitFor();
    await shot('deployment');
  });

  it('keyboard shortcuts switch views, acknowledge, and open the help', async () => {
    await view('#/inbox', 'Inbox');
    const waiting = await b.client.inbox('bob', { source: 'local' });
    expect(waiting).toHaveLength(1);
    await page.locator(`[data-message-id="${waiting[0]!.message_id}"][aria-current="true"]`).waitFor();
    await page.keyboard.press('a');
    await page.getByRole('heading', { name: 'Inbox zero' }).waitFor();
    expect(await b.client.inbox('bob', { source: 'local' })).toEqual([]);
    await page.keyboard.press('2');
    await page.getByRole('heading', { name: 'Conversations', level: 2 }).waitFor();
    await page.keyboard.press('/');
    await page.getByRole('heading', { name: 'Search', level: 2 }).waitFor();
    // the search field takes the keys; Escape gives them back to the shortcuts
    await page.keyboard.type('lunch');
    await page.keyboard.press('Escape');
    await page.keyboard.press('?');
    await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
    await shot('shortcuts');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    expect(await page.locator('#search-q').inputValue()).not.toContain('?');
  });

  it('reads well with what peers choose: long names, a file, a group, a malformed link', async () => {
    // the longest agent number the relay's own routes take; its conversation id is longer
    const long = 'n'.repeat(100);
    await a.client.register({ enrollment_code: await stage.grant(long), name: long });
    await until(
      async () => (await a.client.status()).agents.every((s) => s.session === 'connected'),
      20_000,
      'the long-named agent connects',
    );
    const file = join(a.home, 'quarterly-report.pdf');
    writeFileSync(file, 'not really a pdf');
    // all from the new agent: alice's key was changed behind her daemon above
    const attached = await a.client.send(long, { to: 'bob', content: 'the report', file_path: file });
    const fromLong = await a.client.send(long, { to: 'bob', content: 'hello from a long name' });
    const group = await a.client.createConversation(long, {
      kind: 'group',
      name: 'Launch planning',
      members: ['bob'],
    });
    const kickoff = await a.client.send(long, { conversation_id: group.conversation_id, content: 'kickoff at nine' });
    await b.client.saveContact('bob', { agent_number: long, alias: 'L'.repeat(150) });

    // a file is named, sized and saved from the terminal; its key never reaches the screen
    await view('#/inbox', 'Inbox');
    const item = page.locator(`[data-message-id="${attached.message_id}"]`);
    const shown = item.getByTestId('attachment');
    await shown.getByText('quarterly-report.pdf').waitFor();
    expect(await shown.textContent()).toContain('16 bytes');
    expect(await shown.textContent()).toContain('--save DIR');
    expect(await item.textContent()).not.toMatch(/attachment\/v1|"key"|nonce/);

    // a group's message says where it was written; a reply to it goes to the group, and says so
    await page.locator(`[data-message-id="${fromLong.message_id}"]`).waitFor();
    const inGroup = page.locator(`[data-message-id="${kickoff.message_id}"]`);
    await inGroup.getByText('in Launch planning').waitFor();
    await inGroup.getByRole('button', { name: 'Reply' }).click();
    await inGroup.getByRole('textbox', { name: 'Reply in Launch planning' }).fill('nine works');
    await inGroup.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Reply sent to Launch planning.').waitFor();
    /** the group's creator receives `content` in the group */
    const inTheGroup = (content: string, what: string) =>
      until(
        () =>
          aliceEvents.find(
            (e) =>
              e.type === 'message' &&
              e.agent === long &&
              e.message.content === content &&
              e.message.conversation_id === group.conversation_id,
          ),
        15_000,
        what,
      );
    await inTheGroup('nine works', 'the reply reaches the group');

    // a group by its name, its roster change as a sentence, a message to it goes to the group
    await view('#/conversations', 'Conversations');
    await page.locator('.conv-item', { hasText: 'Launch planning' }).click();
    await page.getByRole('heading', { name: 'Launch planning', level: 2 }).waitFor();
    await page.getByTestId('thread').getByText(`${long} created the group “Launch planning”`).waitFor();
    await page.getByRole('textbox', { name: 'Message Launch planning' }).fill('see you there');
    await page.getByRole('textbox', { name: 'Message Launch planning' }).press('Control+Enter');
    await inTheGroup('see you there', "the group's creator receives the message");
    // what bob wrote there is to the group by its name, not to its id
    const mine = page.getByTestId('thread').locator('.message.outbound', { hasText: 'see you there' });
    await mine.waitFor();
    expect(await mine.locator('.message-who').textContent()).toBe('to Launch planning');

    // the long-named peer's conversation opens, and nothing sticks out of the page sideways
    await view(`#/conversations/dm:bob:${long}`, `With ${long}`);
    await page.getByTestId('thread').getByText('hello from a long name').waitFor();
    await view('#/contacts', 'Contacts');
    await page.getByText('L'.repeat(150)).waitFor();
    for (const hash of ['#/contacts', '#/keys', '#/inbox', `#/conversations/dm:bob:${long}`]) {
      await page.evaluate(`window.location.hash = ${JSON.stringify(hash)}`);
      await page.waitForTimeout(300);
      expect(await beyondRightEdge(), `${hash}: elements beyond the window's right edge`).toEqual([]);
    }

    // a link with a malformed hash (any page may make one) still opens the dashboard
    await view('#/keys', 'Keys');
    await page.goto(`${launch.base_url}/#/conversations/%E0%A4%A`);
    await page.reload();
    await page.getByRole('heading', { name: 'Conversations', level: 2 }).waitFor({ timeout: 10_000 });

    // leave the inbox as the tests after this expect it
    for (const m of await b.client.inbox('bob', { source: 'local' })) await b.client.ack('bob', m.message_id);
  }, 60_000);

  it('lays out a long conversation, keys, contacts and the help in a wide and a narrow window', async () => {
    const long = 'n'.repeat(100); // registered by the test before
    await b.client.saveContact('bob', { agent_number: long, alias: 'L'.repeat(150), notes: 'note '.repeat(120) });
    for (let i = 1; i <= 30; i++) await a.client.send(long, { to: 'bob', content: `line ${i} of a long talk` });
    // where the list, the reply box and the newest message are, and whether the page itself scrolled
    const layout = async () =>
      (await page.evaluate(`(() => {
        const box = (e) => { const r = e.getBoundingClientRect(); return { top: r.top, bottom: r.bottom }; };
        const thread = document.querySelector('[data-testid="thread"]');
        return {
          scrolled: document.querySelector('main').scrollTop,
          list: box(document.querySelector('.split-list h2')),
          reply: box(document.querySelector('.thread textarea')),
          pane: box(thread),
          newest: box([...thread.querySelectorAll('.message')].pop()),
          height: window.innerHeight,
        };
      })()`)) as Record<'list' | 'reply' | 'pane' | 'newest', { top: number; bottom: number }> & {
        scrolled: number;
        height: number;
      };
    const buttonHeights = async () =>
      (await page.evaluate(
        `[...document.querySelectorAll('td.actions button')].map((b) => b.getBoundingClientRect().height)`,
      )) as number[];

    for (const width of [1280, 400]) {
      await page.setViewportSize({ width, height: 800 });
      const at = `${width}px`;

      // a long conversation opens on its newest message, in the thread's own scroll area
      await view('#/inbox', 'Inbox');
      await view(`#/conversations/dm:bob:${long}`, `With ${long}`);
      await page.getByTestId('thread').getByText('line 30 of a long talk').waitFor();
      await page.waitForTimeout(200);
      const l = await layout();
      expect(l.reply.top, `${at}: the reply box is in the window`).toBeGreaterThanOrEqual(0);
      expect(l.reply.bottom, `${at}: the reply box is in the window`).toBeLessThanOrEqual(l.height);
      expect(l.newest.bottom, `${at}: the newest message is in view`).toBeLessThanOrEqual(l.pane.bottom + 1);
      expect(l.newest.top, `${at}: the newest message is in view`).toBeGreaterThanOrEqual(Math.max(l.pane.top, 0));
      if (width === 1280) {
        // side by side: the page does not scroll, the list stays where it was
        expect(l.scrolled, `${at}: the page scrolled`).toBe(0);
        expect(l.list.top, `${at}: the list is in the window`).toBeGreaterThanOrEqual(0);
      }
      await look(`long-conversation-${width}`);

      // fingerprints wrap whole between their groups, and nothing else sticks out
      await view('#/keys', 'Keys');
      await page.getByText('pinned', { exact: true }).first().waitFor();
      const cut = (await page.evaluate(
        `[...document.querySelectorAll('.fingerprint')].filter((e) => [...e.getClientRects()].some((r) => r.right > e.closest('main').getBoundingClientRect().right)).map((e) => e.textContent)`,
      )) as string[];
      expect(cut, `${at}: fingerprints cut at the right edge`).toEqual([]);
      expect(await beyondRightEdge(), `${at}: keys beyond the window's right edge`).toEqual([]);
      await look(`keys-${width}`);

      // a contact's button is one line, whatever the notes beside it
      await view('#/contacts', 'Contacts');
      await page.getByText('L'.repeat(150)).waitFor();
      const heights = await buttonHeights();
      expect(heights.length).toBeGreaterThan(0);
      for (const h of heights) expect(h, `${at}: a contact's Open button is one line`).toBeLessThan(40);
      await look(`contacts-${width}`);

      // the help covers the whole page, the agent picker too
      await page.keyboard.press('?');
      await page.getByRole('dialog', { name: 'Keyboard shortcuts' }).waitFor();
      const onTop = (await page.evaluate(`(() => {
        const r = document.querySelector('.agent-pick select').getBoundingClientRect();
        return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)?.closest('.overlay') !== null;
      })()`)) as boolean;
      expect(onTop, `${at}: the agent picker shows above the help's backdrop`).toBe(true);
      await look(`help-${width}`);
      await page.keyboard.press('Escape');
      await page.getByRole('dialog').waitFor({ state: 'detached' });
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    for (const m of await b.client.inbox('bob', { source: 'local' })) await b.client.ack('bob', m.message_id);
  }, 60_000);

  it('says so on every view when the relay refuses the agent (revoked by the operator), and what to do', async () => {
    // an agent of its own, so that bob stays as the later views expect him
    await b.client.register({ enrollment_code: await stage.grant('carol'), name: 'carol' });
    const revoked = await runRelayCli(['agent', 'revoke', '--agent-id', 'carol', '--tenant', 'acme'], relay.env);
    expect(revoked.code, revoked.stderr).toBe(0);
    await view('#/inbox', 'Inbox');
    // registered after the page loaded: the picker learns of carol from her session's events
    const picker = page.getByLabel('Agent');
    await picker.locator('option', { hasText: 'carol' }).waitFor({ state: 'attached', timeout: 15_000 });
    await picker.selectOption('carol');
    const banner = page.getByRole('alert').filter({ hasText: "The relay refuses carol's identity." });
    await banner.waitFor({ timeout: 30_000 });
    expect(await banner.textContent()).toContain('svc deregister --local carol');
    await shot('agent-refused');
    // removed here while it is shown: it leaves the picker, and the page shows the agent left
    await b.client.deregister('carol', { revoke: false });
    await picker.locator('option', { hasText: 'carol' }).waitFor({ state: 'detached', timeout: 15_000 });
    await banner.waitFor({ state: 'detached' });
    expect(await picker.inputValue()).toBe('bob');
  });

  it('shows a designed error when the relay is gone, and a sign-in hint without a session', async () => {
    await relay.stop();
    // the page says why the agent is not connected (the daemon's session_error)
    const down = page.getByRole('status').filter({ hasText: 'bob is not connected to its relay.' });
    await down.waitFor({ timeout: 20_000 });
    expect(await down.textContent()).toContain('The relay does not answer');
    await view('#/contacts', 'Contacts');
    await page.getByRole('heading', { name: 'Could not load this' }).waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: 'Try again' }).waitFor();
    await shot('error');
    // the event stream of the daemon goes on: the page keeps working from the archive
    await view('#/search', 'Search');
    await page.getByRole('searchbox', { name: 'Search messages' }).fill('budget');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByTestId('search-results').waitFor();
  });

  describe('refusals', () => {
    const host = () => `127.0.0.1:${launch.port}`;
    const origin = () => `http://127.0.0.1:${launch.port}`;
    let cookie = '';
    let key = '';
    /** what the page sends: its session cookie and its page key */
    let session: Record<string, string> = {};
    beforeAll(async () => {
      const name = `svc_dashboard_${launch.port}`;
      const c = (await browser.cookies(launch.base_url)).find((x) => x.name === name);
      cookie = `${name}=${c?.value}`;
      key = ((await page.evaluate("localStorage.getItem('svc.dashboard.page-key')")) as string | null) ?? '';
      session = { cookie, 'x-svc-page-key': key };
    });

    it('serves the page with a strict CSP and no CORS header', async () => {
      const r = await raw('GET', '/', { host: host() });
      expect(r.status).toBe(200);
      expect(r.headers['content-security-policy']).toContain("default-src 'none'");
      expect(r.headers['content-security-policy']).toContain("script-src 'self'");
      expect(r.headers['content-security-policy']).not.toContain('unsafe');
      const pre = await raw('OPTIONS', '/api/v1/agents', {
        host: host(),
        origin: 'http://evil.example',
        'access-control-request-method': 'POST',
      });
      expect(pre.headers['access-control-allow-origin']).toBeUndefined();
      const api = await raw('GET', '/api/v1/agents', { host: host(), ...session, origin: origin() });
      expect(api.status).toBe(200);
      expect(api.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('refuses a foreign Host (DNS rebinding), even with the session', async () => {
      for (const h of [`evil.example:${launch.port}`, `127.0.0.1.nip.io:${launch.port}`, '127.0.0.1:1']) {
        const r = await raw('GET', '/api/v1/agents', { host: h, ...session });
        expect(r.status, h).toBe(403);
        expect(JSON.parse(r.body)).toMatchObject({ error: 'dashboard_forbidden' });
      }
      expect((await raw('GET', '/', { host: `evil.example:${launch.port}` })).status).toBe(403);
    });

    it('refuses a state change with a foreign or missing Origin, even with the session', async () => {
      const body = JSON.stringify({ to: 'alice', content: 'forged' });
      const json = { 'content-type': 'application/json' };
      for (const o of ['http://evil.example', `http://localhost.evil.example:${launch.port}`, undefined]) {
        const r = await raw(
          'POST',
          '/api/v1/agents/bob/send',
          { host: host(), ...session, ...json, ...(o ? { origin: o } : {}) },
          body,
        );
        expect(r.status, String(o)).toBe(403);
      }
      const crossSite = await raw('GET', '/api/v1/agents', {
        host: host(),
        ...session,
        'sec-fetch-site': 'cross-site',
      });
      expect(crossSite.status).toBe(403);
    });

    it('refuses the API without the session cookie, with a made-up one, or with the cookie alone', async () => {
      // the cookie alone is what a program on another loopback port gets from the browser
      for (const h of [
        {} as Record<string, string>,
        { cookie: `svc_dashboard_${launch.port}=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`, 'x-svc-page-key': key },
        { cookie },
        { 'x-svc-page-key': key },
      ]) {
        const r = await raw('GET', '/api/v1/agents', { host: host(), origin: origin(), ...h });
        expect(r.status, JSON.stringify(h)).toBe(401);
        expect(JSON.parse(r.body)).toMatchObject({ error: 'dashboard_session_required' });
      }
      expect((await raw('GET', '/api/events', { host: host() })).status).toBe(401);
      expect((await raw('GET', '/api/events', { host: host(), cookie })).status).toBe(401);
    });

    it('never hands the page a credential or an identity change', async () => {
      const json = { 'content-type': 'application/json', host: host(), origin: origin(), ...session };
      for (const [method, path, body] of [
        ['POST', '/api/v1/agents/bob/token', '{}'],
        ['POST', '/api/v1/agents/bob/keys/generate', '{}'],
        ['POST', '/api/v1/shutdown', '{}'],
        ['DELETE', '/api/v1/agents/bob', '{}'],
        ['DELETE', '/api/v1/agents/bob/contacts/alice', '{}'],
        // no generic relay proxy, not even for a call the page makes by name
        ['POST', '/api/v1/agents/bob/relay', JSON.stringify({ method: 'GET', path: 'agents/me' })],
      ] as const) {
        const r = await raw(method, path, json, body);
        expect(r.status, `${method} ${path} ${body}`).toBe(403);
      }
      // a method the page never uses is not forwarded at all
      const patch = await raw('PATCH', '/api/v1/agents/bob/profile', json, '{"display_name":"mallory"}');
      expect(patch.status).toBe(404);
      expect((await b.client.status()).pid).toBe(process.pid); // still running
    });

    it('a browser without the session sees how to sign in', async () => {
      await browser.clearCookies();
      await page.goto(`${launch.base_url}/`);
      await page.getByRole('heading', { name: 'Sign in from the terminal' }).waitFor();
      await shot('signed-out');
    });
  });

  it('says that no agent can sign in while the vault is locked (a wrong passphrase), and what to do', async () => {
    const home = tempHome();
    const first = await startDaemon(home);
    await first.client.registerLocal({ name: 'ann' });
    await first.daemon.close();
    const locked = await startDaemon(home, { vaultPassphrase: 'not the passphrase' });
    try {
      const there = await locked.client.openDashboard({ port: 0 });
      await page.goto(there.url);
      const banner = page.getByRole('alert').filter({ hasText: 'No agent can sign in. The file vault is locked:' });
      await banner.waitFor({ timeout: 20_000 });
      expect(await banner.textContent()).toContain('svc stop');
      // not the banner of an agent that is only waiting for its relay
      expect(await page.getByText('the daemon keeps trying').count()).toBe(0);
      await shot('vault-locked');
    } finally {
      await locked.daemon.close();
    }
  });
});
