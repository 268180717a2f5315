/**
 * Agents set up the way their owners do it, with the real `svc` CLI (./svc-cli.ts) against
 * a relay process: the operator's grant, `svc deployment fetch` with the trust bundle, and
 * `svc register`; and the cleaning up after such a test.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { LocalAgent } from '@svc/daemon/client';
import { tail } from './index.js';
import { grantCode, type RelayProcess } from './relay-process.js';
import { daemonLog, type Home, svc, svcJson } from './svc-cli.js';

export interface CliRegistration {
  /** `svc-relay grant` flags (default: tenant acme) */
  grantFlags?: string[];
  /** more `svc register` flags */
  registerFlags?: string[];
}

/** Trusts the relay's deployment (as `dev`) on `home` and registers `agentId` there. */
export async function registerWithCli(
  relay: RelayProcess,
  home: Home,
  agentId: string,
  { grantFlags = ['--tenant', 'acme'], registerFlags = [] }: CliRegistration = {},
): Promise<LocalAgent> {
  const bundle = join(relay.dataDir, 'deployment', 'trust-bundle.json');
  const [code] = await Promise.all([
    grantCode(relay, agentId, grantFlags),
    svcJson(home, ['deployment', 'fetch', '--url', relay.url, '--trust', bundle, '--name', 'dev', '--json']),
  ]);
  return svcJson<LocalAgent>(home, ['register', '--enrollment-grant', code, ...registerFlags, '--json']);
}

/**
 * Stops every home's daemon and the relay; removes their directories unless a test
 * failed (their logs are then kept to read).
 */
export async function stopCliAgents(relay: RelayProcess | undefined, homes: Home[], failed: boolean): Promise<void> {
  for (const home of homes) await svc(home, ['--no-autostart', 'stop']).catch(() => undefined);
  await relay?.stop();
  if (failed) return;
  for (const home of homes) rmSync(home.dir, { recursive: true, force: true });
  if (relay) rmSync(relay.dataDir, { recursive: true, force: true });
}

/** What to read when such a test failed: the relay's log, each home's daemon log, then `more` (title → text). */
export function cliAgentLogs(relay: RelayProcess, homes: Home[], more: Record<string, string> = {}): string {
  return [
    `relay log\n${tail(relay.logFile)}`,
    ...homes.map((h) => `${h.label} daemon\n${tail(daemonLog(h))}`),
    ...Object.entries(more).map(([title, text]) => `${title}\n${text}`),
  ].join('\n---\n');
}
