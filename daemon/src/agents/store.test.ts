/**
 * An agent.json the store cannot use is config_invalid (AgentConfigUnusableError) naming the
 * file, what is wrong and what to do, whatever is wrong with it, and is never written to;
 * entries() lists it beside the agents that can be read.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@svc/test-harness';
import { describe, expect, it } from 'vitest';
import { type AgentConfig, AgentConfigUnusableError, AgentStore } from './store.js';

const config = (name: string): AgentConfig => ({
  name,
  agent_id: name,
  agent_number: name,
  tenant_id: 'acme',
  deployment: 'dev',
  deployment_id: 'dep-1',
  api_url: 'https://relay.example',
  capabilities: ['http-relay'],
  signing_public_key: 'sig',
  encryption_public_key: 'enc',
  registered_at: '2026-01-01T00:00:00.000Z',
  rotation: 0,
});

describe('AgentStore with an agent.json it cannot use', () => {
  it.each([
    ['cut short', (c: string) => c.slice(0, 30), /is damaged \(.*JSON.*\)/],
    ['empty', () => '', /is damaged \(/],
    ['not an object', () => '[1, 2]', /is damaged \(Expected object\)/],
    [
      'a field missing',
      (c: string) => c.replace(/"agent_number": "[^"]*",/, ''),
      /is damaged \(agent_number: Expected required property\)/,
    ],
    [
      'a field of the wrong type',
      (c: string) => c.replace('"rotation": 0', '"rotation": "0"'),
      /is damaged \(rotation: Expected integer\)/,
    ],
    [
      "another agent's",
      (c: string) => c.replace('"name": "eve"', '"name": "dan"'),
      / names another agent \("dan", not eve\)/,
    ],
  ])('%s: config_invalid naming the file and what to do; the file is left as it was', (_what, spoil, problem) => {
    const store = new AgentStore(tempDir('svc-agent-store-'));
    store.save(config('dan'));
    store.save(config('eve'));
    const file = join(store.agentDir('eve'), 'agent.json');
    writeFileSync(file, spoil(readFileSync(file, 'utf8')));
    const before = readFileSync(file);

    let thrown: unknown;
    try {
      store.get('eve');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AgentConfigUnusableError);
    const err = thrown as AgentConfigUnusableError;
    expect(err).toMatchObject({ code: 'config_invalid', file });
    expect(err.message).toMatch(new RegExp(`^The agent config ${file} `));
    expect(err.message).toMatch(problem);
    expect(err.hint).toBe(
      `restore it from a backup (the next command for the agent, or svc agent list, finds it repaired (no restart needed)); or give the agent up: svc deregister eve --local sets its directory ${store.agentDir('eve')} aside (its archive is in it) and, if it was enrolled on a relay, ask that relay's operator to revoke it (svc-relay agent revoke)`,
    );
    expect(err.message.endsWith(`; it was not changed: ${err.hint}.`)).toBe(true);

    // listed with why, beside the agent that can be read; its name is taken
    expect(store.entries()).toEqual([
      { name: 'dan', config: config('dan') },
      { name: 'eve', error: expect.any(AgentConfigUnusableError) },
    ]);
    expect(store.list().map((c) => c.name)).toEqual(['dan']);
    expect(store.has('eve')).toBe(true);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it('one that cannot be read at all (a directory in its place) is config_invalid too', () => {
    const store = new AgentStore(tempDir('svc-agent-store-'));
    mkdirSync(join(store.agentDir('eve'), 'agent.json'), { recursive: true });
    expect(() => store.get('eve')).toThrow(/^The agent config .*agent\.json could not be read \(EISDIR/);
    expect(store.entries()).toEqual([{ name: 'eve', error: expect.any(AgentConfigUnusableError) }]);
  });

  it('extra fields (a later svc may add some) are kept as they are', () => {
    const store = new AgentStore(tempDir('svc-agent-store-'));
    const later = { ...config('eve'), added_later: true };
    store.save(later);
    expect(store.get('eve')).toEqual(later);
  });
});
