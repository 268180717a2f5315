/**
 * The live agents of this daemon: each one's archive and relay session, by name or number.
 * An agent whose archive cannot be used (archive_unusable: a newer svc wrote it, it is
 * damaged, it cannot be opened) or whose agent.json cannot be read (config_invalid) is kept
 * out of service: it has no session, status shows it with the file and what to do, every
 * command for it but deregistration answers that code, its file is left as it is, its name
 * stays taken, and the other agents run as usual.
 */
import { existsSync } from 'node:fs';
import type { Logger } from 'pino';
import { Archive, ArchiveUnusableError } from '../archive/archive.js';
import { archiveIntegrity } from '../archive/integrity.js';
import { keepPins, readPins, setArchiveAside } from '../archive/reset.js';
import type { ArchiveIntegrity, DaemonSummary } from '../client/api.js';
import type { SessionTiming } from '../config/config.js';
import type { DeploymentStore } from '../deployments/store.js';
import { type AgentFileUnusableError, DaemonError } from '../errors.js';
import type { EventBus } from '../events.js';
import type { EdgeLink } from '../local-stack/edge-link.js';
import { unreadCount } from '../messaging/conversations.js';
import { type AgentRelay, agentRelay } from '../session/agent-relay.js';
import { AgentSession } from '../session/session.js';
import { forgetAgentSecrets, type Vault } from '../vault/index.js';
import { agentOutOfService } from './out-of-service.js';
import type { EnrollmentAnswer } from './register.js';
import { type AgentConfig, AgentConfigUnusableError, type AgentStore } from './store.js';

/** How often an agent out of service is looked at again, at most (commands and status ask). */
export const RECHECK_MS = 2000;

export interface OutOfServiceAgent {
  name: string;
  /** undefined when it is its agent.json that cannot be read */
  config?: AgentConfig;
  error: AgentFileUnusableError;
}

export class AgentManager {
  readonly store: AgentStore;
  readonly #deployments: DeploymentStore;
  readonly #vault: Vault;
  readonly #events: EventBus;
  readonly #log: Logger;
  readonly #timing: SessionTiming;
  readonly #sessions = new Map<string, AgentSession>();
  /** agents out of service, by name: no session, the file untouched (looked at again: #recheck) */
  readonly #unusable = new Map<string, OutOfServiceAgent>();
  /** when each agent out of service was last looked at again */
  readonly #checkedAt = new Map<string, number>();
  /** set once the sessions stop (the daemon is stopping): nothing is started again */
  #stopping = false;
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

  /** The agent's archive; one this svc cannot use leaves the agent out of service (and throws archive_unusable). */
  #openArchive(config: AgentConfig): Archive {
    const file = this.store.archivePath(config.name);
    try {
      return Archive.open(file);
    } catch (err) {
      const error = ArchiveUnusableError.of(file, err);
      this.#outOfService({ name: config.name, config, error });
      throw error;
    }
  }

  #outOfService(out: OutOfServiceAgent): void {
    const before = this.#unusable.get(out.name);
    this.#unusable.set(out.name, out);
    // looked at again and still the same: said once already
    if (before?.error.message === out.error.message) return;
    this.#log.error(
      { agent: out.name, file: out.error.file, code: out.error.code, err: out.error.message },
      `agent out of service: its ${out.config ? 'archive' : 'agent.json'} cannot be used (the file was left as it is)`,
    );
  }

  #open(config: AgentConfig): AgentSession {
    const archive = this.#openArchive(config);
    const session: AgentSession = new AgentSession({
      config,
      archive,
      vault: this.#vault,
      events: this.#events,
      log: this.#log,
      ca: this.#caOf(config),
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

  /**
   * Opens every stored agent and starts its session (a locked vault leaves them offline). An
   * agent whose agent.json or archive cannot be used stays out of service; the others start
   * all the same, also when that is every agent: the daemon still answers status and
   * doctor, and says why.
   */
  startAll(): void {
    for (const entry of this.store.entries()) {
      if ('error' in entry) {
        this.#outOfService({ name: entry.name, error: entry.error });
        continue;
      }
      this.#startOne(entry.config);
    }
  }

  /** Opens the agent and starts its session; undefined when its archive cannot be used (it is out of service). */
  #startOne(config: AgentConfig): AgentSession | undefined {
    let session: AgentSession;
    try {
      session = this.#open(config);
    } catch (err) {
      if (err instanceof ArchiveUnusableError) return undefined;
      throw err;
    }
    try {
      session.keys();
      session.start();
    } catch (err) {
      // a locked vault: the session stays offline, and its status says why
      session.notStarted((err as Error).message);
      this.#log.warn({ agent: config.name, err: (err as Error).message }, 'agent session not started');
    }
    return session;
  }

  /**
   * Looks at an agent out of service again (at most every RECHECK_MS): once its files can be
   * used (restored from a backup, moved away, permissions fixed), it is back in service with
   * its session started, no daemon restart needed. Asked by every command that names it and
   * by status. Nothing is written to files that still cannot be used.
   */
  #recheck(name: string): void {
    if (this.#stopping || !this.#unusable.has(name)) return;
    const now = Date.now();
    if (now - (this.#checkedAt.get(name) ?? Number.NEGATIVE_INFINITY) < RECHECK_MS) return;
    this.#checkedAt.set(name, now);
    let config: AgentConfig;
    try {
      config = this.store.get(name);
    } catch (err) {
      if (err instanceof AgentConfigUnusableError) this.#outOfService({ name, error: err });
      // (its directory gone: it stays as it was, for deregistration to tidy)
      return;
    }
    const session = this.#startOne(config);
    if (!session) return;
    this.#unusable.delete(name);
    this.#checkedAt.delete(name);
    this.#log.info({ agent: name }, 'agent back in service: its files can be used again');
  }

  /** Every agent out of service looked at again (a copy of the names: a recheck may take one out). */
  #recheckAll(): void {
    for (const name of [...this.#unusable.keys()]) this.#recheck(name);
  }

  sessions(): AgentSession[] {
    return [...this.#sessions.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Agents kept out of service (their agent.json or archive cannot be used), by name; each looked at again first. */
  outOfService(): OutOfServiceAgent[] {
    this.#recheckAll();
    return [...this.#unusable.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Every registered agent's config, in service or not, by name; an agent whose agent.json
   * cannot be read has none (status shows it).
   */
  configs(): AgentConfig[] {
    return [
      ...this.sessions().map((s) => s.config),
      ...this.outOfService().flatMap((u) => (u.config ? [u.config] : [])),
    ].sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The integrity of each in-service agent's archive, or of the one named (out of service:
   * its code, as for any request as that agent). Runs on this thread: a quick check reads
   * every page once, and doctor asks for it at most every six hours per archive.
   */
  integrity(opts: { agent?: string; full?: boolean } = {}): ArchiveIntegrity[] {
    const sessions = opts.agent === undefined ? this.sessions() : [this.resolve(opts.agent)];
    return sessions.map((s) => {
      const file = this.store.archivePath(s.name);
      return { agent: s.name, file, ...archiveIntegrity(s.archive.db, file, { full: opts.full === true }) };
    });
  }

  /** Sessions and unread counts of every agent, no relay call (status lines). */
  summary(): DaemonSummary {
    const agents: DaemonSummary['agents'] = [
      ...this.sessions().map((s) => ({
        name: s.name,
        agent_number: s.config.agent_number,
        session: s.state,
        unread: unreadCount(s.archive),
      })),
      ...this.outOfService().map(({ name, config }) => ({
        name,
        ...(config ? { agent_number: config.agent_number } : {}),
        session: 'unusable' as const,
        unread: 0,
      })),
    ];
    return { agents: agents.sort((a, b) => a.name.localeCompare(b.name)) };
  }

  /**
   * A local agent by name, else by agent number; one out of service fails with the code of
   * what cannot be used (archive_unusable, config_invalid), naming the file.
   */
  resolve(ref: string): AgentSession {
    const found = this.find(ref);
    if (found instanceof AgentSession) return found;
    throw agentOutOfService(found);
  }

  /**
   * A local agent by name, else by agent number, in service (its session) or not; unknown_agent
   * otherwise. A name wins over an agent number, also an out-of-service agent's name: `--as
   * zeta` must never act as (or deregister) another agent whose number happens to be zeta.
   */
  find(ref: string): AgentSession | OutOfServiceAgent {
    this.#recheckAll();
    const byName = this.#sessions.get(ref) ?? this.#unusable.get(ref);
    if (byName) return byName;
    for (const s of this.#sessions.values()) if (s.config.agent_number === ref) return s;
    const out = [...this.#unusable.values()].find((u) => u.config?.agent_number === ref);
    if (out) return out;
    throw new DaemonError('unknown_agent', `No local agent ${ref}; see \`svc agent list\`.`);
  }

  exists(name: string): boolean {
    return this.#sessions.has(name) || this.#unusable.has(name) || this.store.has(name);
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

  /**
   * Forgets a local agent here: its secrets leave the vault and its directory is set aside
   * (renamed, not deleted). One out of service goes the same way, its unusable file with it.
   */
  async remove(ref: string): Promise<void> {
    const found = this.find(ref);
    if (found instanceof AgentSession) {
      await found.stop();
      found.archive.close();
    }
    let aside: string;
    try {
      aside = this.store.retire(found.name);
    } catch (err) {
      // a directory that cannot be set aside leaves the agent as it was: running again, with its secrets
      if (found instanceof AgentSession) this.#reopen(found.config);
      throw new DaemonError(
        'home_not_writable',
        `Agent ${found.name}'s directory ${this.store.agentDir(found.name)} cannot be set aside (${(err as Error).message}): the agent stays registered here.`,
        { cause: err },
      );
    }
    this.#sessions.delete(found.name);
    this.#unusable.delete(found.name);
    this.#checkedAt.delete(found.name);
    forgetAgentSecrets(this.#vault, found.name);
    this.#log.info({ agent: found.name, set_aside: aside }, 'agent forgotten locally');
  }

  /**
   * A new, empty archive for an agent (svc recover reset-db): its session stops, the archive
   * file is set aside beside it (renamed, not deleted), the peers' pinned keys are carried
   * over when the old file can be read, and the session starts again on the new archive
   * (what the old one held stays there: the relay keeps nothing the daemon archived). An agent
   * out of service because of its archive comes back into service; one whose agent.json
   * cannot be read has nothing to start again (config_invalid).
   */
  async resetArchive(ref: string): Promise<{ agent: string; set_aside: string; pins_kept: number | null }> {
    const found = this.find(ref);
    const config = found.config;
    if (!config) throw agentOutOfService(found as OutOfServiceAgent);
    if (found instanceof AgentSession) {
      await found.stop();
      found.archive.close();
    }
    const file = this.store.archivePath(config.name);
    const pins = existsSync(file) ? readPins(file) : [];
    let aside: string;
    try {
      aside = setArchiveAside(file);
    } catch (err) {
      if (found instanceof AgentSession) this.#reopen(config);
      throw new DaemonError(
        'home_not_writable',
        `Agent ${config.name}'s archive ${file} cannot be set aside (${(err as Error).message}); it was not changed.`,
        { cause: err },
      );
    }
    let kept: number | null = null;
    if (pins) {
      const fresh = Archive.open(file);
      try {
        kept = keepPins(fresh, pins);
      } finally {
        fresh.close();
      }
    }
    this.#unusable.delete(config.name);
    this.#checkedAt.delete(config.name);
    this.#reopen(config);
    this.#log.warn({ agent: config.name, set_aside: aside, pins_kept: kept }, 'archive reset: a new one started');
    return { agent: config.name, set_aside: aside, pins_kept: kept };
  }

  /** A session again for an agent whose session was stopped (its archive closed); one that cannot open stays out of service. */
  #reopen(config: AgentConfig): void {
    this.#sessions.delete(config.name);
    try {
      this.#open(config).start();
    } catch (err) {
      this.#log.warn({ agent: config.name, err: (err as Error).message }, 'agent session not started again');
    }
  }

  /**
   * Calls to the relay as an agent out of service whose agent.json can be read (its archive
   * cannot be used): its credentials are in the vault, so it can still revoke itself.
   */
  relayOf(config: AgentConfig): AgentRelay {
    return agentRelay(config, { ca: this.#caOf(config), vault: this.#vault, log: this.#log }).relay;
  }

  /** The extra CAs of the agent's deployment; none once the deployment was removed (it still talks to its recorded API URL). */
  #caOf(config: AgentConfig): string | undefined {
    try {
      return this.#deployments.get(config.deployment).ca_bundle ?? undefined;
    } catch {
      return undefined;
    }
  }

  /** Stops every relay session (and wakes waiting checks); archives stay open for in-flight requests. */
  async stopAll(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.sessions().map((s) => s.stop()));
  }

  closeArchives(): void {
    for (const s of this.#sessions.values()) s.archive.close();
    this.#sessions.clear();
    this.#unusable.clear();
    this.#checkedAt.clear();
  }
}
