/** Runs `svc` in-process with captured output and a fake daemon link. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { DaemonApi, DaemonEvent, DaemonEventStream } from '@svc/daemon/client';
import { tempDir } from '@svc/test-harness';
import { afterEach } from 'vitest';
import { run } from '../src/program.js';

export interface Call {
  method: keyof DaemonApi;
  args: unknown[];
}

type Method = keyof DaemonApi;
export type FakeAnswers = Partial<{ [K in Method]: (...args: Parameters<DaemonApi[K]>) => unknown }>;

/** Every method of DaemonApi: the fake below has exactly these. */
const METHODS = [
  'status',
  'summary',
  'shutdown',
  'listDeployments',
  'fetchDeployment',
  'addDeployment',
  'getDeployment',
  'removeDeployment',
  'renewDeployment',
  'auditDeployments',
  'diagnoseDeployment',
  'archiveIntegrity',
  'checkRelay',
  'resetArchive',
  'register',
  'registerLocal',
  'listAgents',
  'getAgent',
  'deregister',
  'token',
  'keys',
  'generateKeys',
  'uploadSigningKey',
  'backfillKeys',
  'acceptPeerKey',
  'send',
  'reply',
  'inbox',
  'read',
  'check',
  'ack',
  'search',
  'conversations',
  'trust',
  'sync',
  'saveAttachment',
  'createConversation',
  'getConversation',
  'invite',
  'leave',
  'conversationMessages',
  'searchConversations',
  'profile',
  'updateProfile',
  'heartbeat',
  'peerProfile',
  'relate',
  'unrelate',
  'blocked',
  'muted',
  'report',
  'contacts',
  'saveContact',
  'removeContact',
  'events',
  'openDashboard',
  'localStack',
] as const satisfies readonly Method[];
// A DaemonApi method missing from METHODS fails to compile here, so the fake cannot lag behind.
const EVERY_METHOD_LISTED: [Exclude<Method, (typeof METHODS)[number]>] extends [never] ? true : never = true;
void EVERY_METHOD_LISTED;

/** Daemon calls no test scripted, reported by the afterEach below. */
const unscripted: string[] = [];

/** The unscripted calls so far, forgotten once taken (the afterEach below takes them). */
export const takeUnscripted = (): string[] => unscripted.splice(0);

afterEach(() => {
  const seen = takeUnscripted();
  if (seen.length > 0) throw new Error(`unscripted daemon call(s): ${seen.join(', ')}; script them in fakeLink`);
});

/**
 * A DaemonApi that records every call and answers only the calls the test scripted: any
 * other call rejects with its name and fails the test, so an unexpected call cannot pass
 * silently.
 */
export function fakeLink(answers: FakeAnswers = {}): { link: DaemonApi; calls: Call[] } {
  const calls: Call[] = [];
  const fake =
    (method: Method) =>
    (...args: unknown[]) => {
      calls.push({ method, args });
      const answer = (answers as Record<string, ((...a: unknown[]) => unknown) | undefined>)[method];
      if (!answer) {
        unscripted.push(method);
        return Promise.reject(new Error(`unscripted daemon call: ${method}`));
      }
      return Promise.resolve().then(() => answer(...args));
    };
  const link = Object.fromEntries(METHODS.map((m) => [m, fake(m)])) as unknown as DaemonApi;
  return { link, calls };
}

/** An event stream of `events`; with `hold` it stays open after them until closed (`drained` runs then). */
export function fakeEvents(
  events: readonly unknown[],
  options: { hold?: boolean; drained?: () => void } = {},
): DaemonEventStream {
  let close!: () => void;
  const closed = new Promise<void>((resolve) => {
    close = resolve;
  });
  async function* stream(): AsyncGenerator<DaemonEvent> {
    for (const e of events) yield e as DaemonEvent;
    options.drained?.();
    if (options.hold) await closed;
  }
  const it = stream();
  return { [Symbol.asyncIterator]: () => it, close };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  link?: DaemonApi;
  stdin?: string;
  connected?: (autostart: boolean) => void;
  signal?: AbortSignal;
  /** how long `svc stop` waits for the daemon's process to exit */
  stopWaitMs?: number;
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
    ...(options.stopWaitMs === undefined ? {} : { stopWaitMs: options.stopWaitMs }),
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

/** The status of a daemon (pid 42) whose agents are all in service, as a fake link answers it. */
export const DAEMON_STATUS = {
  version: '0.1.0',
  pid: 42,
  home: '/h',
  started_at: '2025-01-01T00:00:00.000Z',
  vault: { kind: 'file-plain' as const },
  agents: [],
};

/**
 * The status of a daemon whose agents, all in service, are `agents`: what the CLI reads to
 * choose the agent a command acts as, when neither --as nor SVC_AGENT says.
 */
export function statusWith(
  ...agents: { name: string; agent_number: string; deployment: string; capabilities: string[] }[]
) {
  return {
    ...DAEMON_STATUS,
    agents: agents.map((a) => ({
      name: a.name,
      agent_number: a.agent_number,
      deployment: a.deployment,
      session: 'connected' as const,
      kind:
        a.capabilities.includes('nats-relay') && !a.capabilities.includes('http-relay')
          ? ('uplink' as const)
          : ('agent' as const),
    })),
  };
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

/** A registered agent `alice` in `home` (its file only: a daemon started on it has an agent to name). */
export function writeAgentFile(home: string): void {
  const dir = join(home, 'agents', 'alice');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(
    join(dir, 'agent.json'),
    JSON.stringify({
      name: 'alice',
      agent_id: 'alice',
      agent_number: 'alice',
      tenant_id: 'acme',
      deployment: 'dev',
      deployment_id: 'dep_test',
      api_url: 'http://127.0.0.1:9',
      capabilities: [],
      signing_public_key: 'x',
      encryption_public_key: 'x',
      registered_at: new Date(0).toISOString(),
      rotation: 0,
    }),
  );
}
