/** Runs `svc` in-process with captured output and a fake daemon link. */
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { tempDir } from '@svc/test-harness';
import { afterEach } from 'vitest';
import type { DaemonLink } from '../src/daemon-link.js';
import { run } from '../src/program.js';

export interface Call {
  method: keyof DaemonLink;
  args: unknown[];
}

export type FakeAnswers = Partial<{ [K in keyof DaemonLink]: (...args: Parameters<DaemonLink[K]>) => unknown }>;

/** Daemon calls no test scripted, reported by the afterEach below. */
const unscripted: string[] = [];

/** The unscripted calls so far, forgotten once taken (the afterEach below takes them). */
export const takeUnscripted = (): string[] => unscripted.splice(0);

afterEach(() => {
  const seen = takeUnscripted();
  if (seen.length > 0) throw new Error(`unscripted daemon call(s): ${seen.join(', ')}; script them in fakeLink`);
});

/**
 * A DaemonLink that records every call and answers only the calls the test scripted: any
 * other call rejects with its name and fails the test, so an unexpected call cannot pass
 * silently.
 */
export function fakeLink(answers: FakeAnswers = {}): { link: DaemonLink; calls: Call[] } {
  const calls: Call[] = [];
  const link = new Proxy({} as DaemonLink, {
    get(_target, prop: string | symbol) {
      if (typeof prop !== 'string' || prop === 'then') return undefined; // not a thenable
      return (...args: unknown[]) => {
        calls.push({ method: prop as keyof DaemonLink, args });
        const answer = (answers as Record<string, ((...a: unknown[]) => unknown) | undefined>)[prop];
        if (!answer) {
          unscripted.push(prop);
          const refused = new Error(`unscripted daemon call: ${prop}`);
          if (prop === 'events') throw refused;
          return Promise.reject(refused);
        }
        if (prop === 'events') return answer(...args);
        return Promise.resolve().then(() => answer(...args));
      };
    },
  });
  return { link, calls };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  link?: DaemonLink;
  stdin?: string;
  connected?: (autostart: boolean) => void;
  signal?: AbortSignal;
}

export async function svc(argv: string[], options: RunOptions = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    env: { SVC_HOME: '/nonexistent/svc-test-home', ...options.env },
    stdout: {
      write: (s: string) => {
        stdout += s;
      },
    },
    stderr: {
      write: (s: string) => {
        stderr += s;
      },
    },
    ...(options.stdin === undefined ? {} : { stdin: Readable.from([Buffer.from(options.stdin)]) }),
    ...(options.signal ? { signal: options.signal } : {}),
    connect: async ({ autostart }) => {
      options.connected?.(autostart);
      if (!options.link) throw new Error('this test gave no daemon link');
      return options.link;
    },
  });
  return { code, stdout, stderr };
}

export async function withTempHome<T>(fn: (home: string) => Promise<T>): Promise<T> {
  const home = tempDir('svc-cli-');
  try {
    return await fn(home);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

export const AGENT = {
  name: 'alice',
  agent_id: 'agt_1',
  agent_number: '1001',
  tenant_id: 'ten_1',
  deployment: 'home',
  deployment_id: 'dep_1',
  api_url: 'https://relay.example',
  capabilities: ['messaging'],
  signing_public_key: 'sig',
  encryption_public_key: 'enc',
  registered_at: '2025-01-01T00:00:00.000Z',
};
