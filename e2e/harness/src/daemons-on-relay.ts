/**
 * The usual stage of a daemon integration test: a real relay process (tenant `acme`), one
 * daemon per agent, each trusting the relay's deployment, its event stream open before
 * its agent registers (so no event is missed), and every agent connected. What differs
 * between tests is an option: a stand-in in front of the relay (a fault proxy, a hostile
 * relay), relay settings, daemon settings, grant arguments, or no registration at all.
 */
import type { DaemonConfig } from '@svc/daemon';
import type { DaemonEvent, DaemonEventStream } from '@svc/daemon/client';
import { relayTrustBundle, startDaemon, type TestDaemon } from './daemon.js';
import { freePort, until } from './index.js';
import { grantCode, type RelayProcess, spawnRelay } from './relay-process.js';

/** Something in front of the relay that the daemons reach it through. */
export interface RelayFront {
  url: string;
  close(): Promise<void>;
}

export interface DaemonsOnRelayOptions<N extends string> {
  /** one daemon per name, started in this order; its agent registers under that name */
  agents: readonly N[];
  /** relay settings beyond the tenant `acme` */
  relayEnv?: Record<string, string>;
  /** daemon settings, for every daemon or per agent */
  daemon?: Partial<DaemonConfig> | ((name: N) => Partial<DaemonConfig>);
  /**
   * Started before the relay, given the relay's port: the relay's public URL is then the
   * front's (the test keeps the front it makes, to steer it).
   */
  front?: (relayPort: number) => Promise<RelayFront>;
  /** trust the deployment, register every agent and wait until all are connected (default true) */
  register?: boolean;
  /** more `svc-relay grant` arguments for every grant (e.g. a capability) */
  grantArgs?: string[];
}

export interface DaemonsOnRelay<N extends string> {
  relay: RelayProcess;
  /** where the daemons reach the relay: the front's URL, or the relay's */
  url: string;
  /** the relay deployment's trust bundle (JSON text) */
  bundle: string;
  daemons: Record<N, TestDaemon>;
  /** every event of each daemon since it started, in order */
  events: Record<N, DaemonEvent[]>;
  /** an enrollment code for `agentId` in tenant `acme` (plus `grantArgs`, plus `extra`) */
  grant(agentId: string, extra?: string[]): Promise<string>;
  /** closes the event streams, the daemons, the relay and the front */
  close(): Promise<void>;
}

export async function startDaemonsOnRelay<N extends string>(
  options: DaemonsOnRelayOptions<N>,
): Promise<DaemonsOnRelay<N>> {
  const relayPort = await freePort();
  const front = options.front ? await options.front(relayPort) : undefined;
  const configOf = (n: N) => (typeof options.daemon === 'function' ? options.daemon(n) : (options.daemon ?? {}));
  const started = await Promise.allSettled([
    spawnRelay({
      port: relayPort,
      env: { SVC_RELAY_TENANTS: 'acme', ...options.relayEnv, ...(front ? { SVC_RELAY_PUBLIC_URL: front.url } : {}) },
    }),
    ...options.agents.map((n) => startDaemon(undefined, configOf(n))),
  ]);
  const streams: DaemonEventStream[] = [];
  const [relay, ...daemons] = started;
  const up = <T>(r: PromiseSettledResult<T>) => (r.status === 'fulfilled' ? r.value : undefined);
  // whatever started is stopped again, also when the stage fails half-way
  const close = async () => {
    for (const s of streams) s.close();
    await Promise.all(daemons.map((d) => up(d)?.daemon.close()));
    await up(relay)?.stop();
    await front?.close();
  };
  try {
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    const ready = daemons.map((d) => up(d)).filter((d) => d !== undefined);
    return await stage(options, up(relay)!, ready, front?.url, streams, close);
  } catch (err) {
    await close();
    throw err;
  }
}

async function stage<N extends string>(
  options: DaemonsOnRelayOptions<N>,
  relay: RelayProcess,
  started: TestDaemon[],
  frontUrl: string | undefined,
  streams: DaemonEventStream[],
  close: () => Promise<void>,
): Promise<DaemonsOnRelay<N>> {
  const daemons = Object.fromEntries(options.agents.map((n, i) => [n, started[i]])) as Record<N, TestDaemon>;
  const events = Object.fromEntries(options.agents.map((n) => [n, []])) as unknown as Record<N, DaemonEvent[]>;
  const url = frontUrl ?? relay.url;
  const bundle = relayTrustBundle(relay);
  const grant = (agentId: string, extra: string[] = []) =>
    grantCode(relay, agentId, ['--tenant', 'acme', ...(options.grantArgs ?? []), ...extra]);

  for (const n of options.agents) {
    const stream = await daemons[n].client.events();
    streams.push(stream);
    void (async () => {
      for await (const e of stream) events[n].push(e);
    })();
  }
  if (options.register !== false) {
    for (const n of options.agents) {
      const { client } = daemons[n];
      await client.fetchDeployment({ url, trust_bundle: bundle, name: 'dev' });
      await client.register({ enrollment_code: await grant(n), name: n });
    }
    await until(
      async () => {
        const all = await Promise.all(options.agents.map((n) => daemons[n].client.status()));
        return all.every((s) => s.agents.every((a) => a.session === 'connected'));
      },
      20_000,
      `${options.agents.join(', ')} connected`,
    );
  }
  return { relay, url, bundle, daemons, events, grant, close };
}
