/**
 * The dashboard against a real daemon that keeps agents out of service: zed's archive was
 * written by a newer svc, yan's agent.json is damaged. The dashboard shows such an agent as
 * out of service with the reason (one red line cut to the width, and in full where its
 * inbox would be), never as connecting; the agent that works shows as usual.
 */
import { rm } from 'node:fs/promises';
import { until } from '@svc/test-harness';
import { agentFile, homeWithAgents, startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { render } from 'ink-testing-library';
import { createElement } from 'react';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Dashboard } from '../src/app.js';

let d: TestDaemon | undefined;
let home: string;
let file: string;
let config: string;
let ui: ReturnType<typeof render> | undefined;

beforeAll(async () => {
  // ann first by name, so she is shown first; a newer svc wrote zed's archive; yan's agent.json is cut short
  home = await homeWithAgents('svc-tui-unusable-', { ann: 'ok', yan: 'config-damaged', zed: 'archive-newer' });
  config = agentFile(home, 'yan', 'agent.json');
  file = agentFile(home, 'zed', 'archive.db');
  d = await startDaemon(home);
}, 30_000);

afterEach(() => ui?.unmount());

afterAll(async () => {
  await d?.daemon.close();
  await rm(home, { recursive: true, force: true });
});

/** Waits for a frame that satisfies `test` (the daemon answers, then Ink renders); fails with the last frame. */
async function frame(test: (f: string) => boolean, what: string): Promise<string> {
  try {
    return await until(
      () => {
        const f = ui!.lastFrame() ?? '';
        return test(f) ? f : undefined;
      },
      15_000,
      what,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last frame:\n${ui!.lastFrame()}`);
  }
}

/** What the right-hand panel says, its lines joined by spaces. */
const panelText = (f: string) =>
  f
    .split('\n')
    .map((l) => /[│║] ([^│║]*?) *[│║]$/.exec(l)?.[1] ?? '')
    .join(' ');

describe('svc tui with agents out of service', () => {
  it('shown first: out of service with the reason on one line, cut to the width; the other agent as usual', async () => {
    const columns = 100;
    ui = render(createElement(Dashboard, { source: d!.client, agent: 'zed', size: { columns, rows: 30 } }));
    const f = await frame((f) => f.includes('out of service'), 'zed out of service');
    expect(f).toMatch(/^svc · daemon /);
    expect(f).toMatch(/● zed\s+unusable/);
    expect(f).toMatch(/ {2}ann\s+offline/);
    expect(f).toMatch(/ {2}yan\s+unusable/);
    const reason = f.split('\n').filter((l) => l.includes('⚠'));
    expect(reason).toEqual([expect.stringMatching(/^⚠ zed is out of service \(archive_unusable\): The archive \//)]);
    expect(reason[0]!.length).toBeLessThanOrEqual(columns);
    expect(reason[0]).toMatch(/…$/); // the file and what to do do not fit in 100 columns
    // the right column has the room for the whole reason: the file, what is wrong, what to do
    const panel = panelText(f);
    expect(panel).toContain('zed is out of service (archive_unusable)');
    expect(panel.replace(/\s+/g, '')).toContain(`The archive ${file} was written by a newer svc`.replace(/\s+/g, ''));
    expect(panel).toMatch(/then restart the daemon \(svc stop, then svc start -b\)\./);
    expect(f).toContain('webhook: not asked (the agent is out of service)');
    expect(f).not.toMatch(/connecting|daemon down|Error:/);
    for (const line of f.split('\n')) expect(line.length, line).toBeLessThanOrEqual(columns);
  });

  it('another agent shown: its own inbox, and the agent out of service marked in the list', async () => {
    ui = render(createElement(Dashboard, { source: d!.client, size: { columns: 100, rows: 30 } }));
    const f = await frame((f) => f.includes('No conversations yet.'), 'ann shown');
    expect(f).toMatch(/● ann\s+offline/);
    expect(f).toMatch(/ {2}yan\s+unusable/);
    expect(f).toMatch(/ {2}zed\s+unusable/);
    expect(f).not.toContain('⚠');
  });

  it('an agent whose agent.json cannot be read: out of service, the code config_invalid and the file', async () => {
    ui = render(createElement(Dashboard, { source: d!.client, agent: 'yan', size: { columns: 100, rows: 30 } }));
    const f = await frame((f) => f.includes('⚠'), 'yan out of service');
    expect(f).toMatch(/● yan\s+unusable/);
    expect(f.split('\n').filter((l) => l.includes('⚠'))).toEqual([
      expect.stringMatching(/^⚠ yan is out of service \(config_invalid\): The agent config \//),
    ]);
    expect(panelText(f)).toContain('yan is out of service (config_invalid)');
    expect(panelText(f).replace(/\s+/g, '')).toContain(`The agent config ${config} is damaged`.replace(/\s+/g, ''));
  });
});
