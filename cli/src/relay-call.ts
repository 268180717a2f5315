/** Relay calls through the daemon's generic proxy (POST /v1/agents/:agent/relay); the daemon adds the JWT. */
import type { RelayCall } from '@svc/daemon/client';
import type { Run } from './app.js';
import { CliError } from './errors.js';

export interface RelayAnswer<T> {
  agent: string;
  status: number;
  body: T;
}

/** Calls the relay as the selected agent; a non-2xx answer becomes its `{error, message}`. */
export async function relay<T>(
  run: Run,
  method: RelayCall['method'],
  path: string,
  body?: unknown,
): Promise<RelayAnswer<T>> {
  const link = await run.link();
  const agent = await run.agent(link);
  run.debug(`relay ${method} ${path} as ${agent}`);
  const answer = await link.relay(agent, body === undefined ? { method, path } : { method, path, body });
  if (answer.status < 200 || answer.status > 299) {
    const err = (answer.body ?? {}) as { error?: unknown; message?: unknown };
    throw new CliError(
      typeof err.error === 'string' ? err.error : 'internal_error',
      typeof err.message === 'string' ? err.message : `The relay answered ${answer.status}.`,
    );
  }
  return { agent, status: answer.status, body: answer.body as T };
}

export const seg = encodeURIComponent;
