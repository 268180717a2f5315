/** The live agents of this daemon: each one's archive and relay session, by name or number. */
import type { Logger } from 'pino';
import { Archive } from '../archive/archive.js';
import type { SessionTiming } from '../config/config.js';
import type { DeploymentStore } from '../deployments/store.js';
import { DaemonError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { EdgeLink } from '../local-stack/edge-link.js';
import { AgentSession } from '../session/session.js';
import { forgetAgentSecrets, type Vault } from '../vault/index.js';
import type { EnrollmentAnswer } from './register.js';
import type { AgentConfig, AgentStore } from './store.js';

export class AgentManager {
  readonly store: AgentStore;
  readonly #deployments: DeploymentStore;
  readonly #vault: Vault;
  readonly #events: EventBus;
  readonly #log: Logger;
  readonly #timing: SessionTiming;
  readonly #sessions = new Map<string, AgentSession>();
  /** the daemon's connection to the local nats-server while `svc start` runs it */
  edge: EdgeLink | undefined;

  constructor(opts: {
    store: AgentStore;
    deployments: DeploymentStore;
    vault: Vault;
    events: EventBus;
    log: Logger;
    timing: SessionTiming;
  }) {
    this.store = opts.store;
    this.#deployments = opts.deployments;
    this.#vault = opts.vault;
    this.#events = opts.events;
    this.#log = opts.log;
    this.#timing = opts.timing;
  }

  /** The signed leaf URL of the agent's deployment document: null where it names none, undefined where the deployment was removed. */
  signedLeafUrl(config: AgentConfig): string | null | undefined {
    try {
      return this.#deployments.get(config.deployment).doc.leaf_url ?? null;
    } catch {
      return undefined;
    }
  }

  #open(config: AgentConfig): AgentSession {
    let ca: string | undefined;
    try {
      ca = this.#deployments.get(config.deployment).ca_bundle ?? undefined;
    } catch {
      // the deployment was removed: the agent still talks to its recorded API URL
    }
    const session: AgentSession = new AgentSession({
      config,
      archive: Archive.open(this.store.archivePath(config.name)),
      vault: this.#vault,
      events: this.#events,
      log: this.#log,
      ca,
      ...this.#timing,
      saveConfig: (c) => this.store.save(c),
      edge: () => this.edge,
      localPeer: (n): AgentSession | undefined => {
        for (const s of this.#sessions.values()) {
          const c = s.config;
          if (
            s !== session &&
            c.agent_number === n &&
            c.deployment_id === config.deployment_id &&
            c.tenant_id === config.tenant_id
          )
            return s;
        }
        return undefined;
      },
    });
    this.#sessions.set(config.name, session);
    return session;
  }

  /** Opens every stored agent and starts its session (a locked vault leaves them offline). */
  startAll(): void {
    for (const config of this.store.list()) {
      const session = this.#open(config);
      try {
        session.keys();
        session.start();
      } catch (err) {
        this.#log.warn({ agent: config.name, err: (err as Error).message }, 'agent session not started');
      }
    }
  }

  sessions(): AgentSession[] {
    return [...this.#sessions.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** A local agent by name, else by agent number. */
  resolve(ref: string): AgentSession {
    const byName = this.#sessions.get(ref);
    if (byName) return byName;
    for (const s of this.#sessions.values()) if (s.config.agent_number === ref) return s;
    throw new DaemonError('unknown_agent', `No local agent ${ref}; see \`svc agent list\`.`);
  }

  exists(name: string): boolean {
    return this.#sessions.has(name) || this.store.has(name);
  }

  /** A new agent; `answer` is the relay's enrollment (a local agent has none). */
  add(config: AgentConfig, answer?: EnrollmentAnswer): AgentSession {
    this.store.save(config);
    const session = this.#open(config);
    if (answer) session.credentials.prime(answer.access_token, answer.access_token_expires_at);
    session.start();
    this.#log.info({ agent: config.name, agent_number: config.agent_number }, 'agent registered');
    return session;
  }

  async remove(ref: string): Promise<void> {
    const session = this.resolve(ref);
    await session.stop();
    session.archive.close();
    this.#sessions.delete(session.name);
    forgetAgentSecrets(this.#vault, session.name);
    this.store.retire(session.name);
    this.#log.info({ agent: session.name }, 'agent forgotten locally');
  }

  /** Stops every relay session (and wakes waiting checks); archives stay open for in-flight requests. */
  async stopAll(): Promise<void> {
    await Promise.all(this.sessions().map((s) => s.stop()));
  }

  closeArchives(): void {
    for (const s of this.#sessions.values()) s.archive.close();
    this.#sessions.clear();
  }
}
