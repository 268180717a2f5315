/**
 * The machine's local stack as the daemon runs it: the nats-server child (supervisor.ts),
 * the daemon's own connection to it (edge-link.ts), and, with an uplink, the named source
 * of every local agent, through which those agents then receive instead of the relay's
 * HTTP stream. Stopping it (or an agent leaving) puts the agents back on the stream.
 */
import { mkdirSync } from 'node:fs';
import { isIP } from 'node:net';
import { toBase64url } from '@svc/shared';
import type { Logger } from 'pino';
import type { AgentManager } from '../agents/manager.js';
import { outOfServicePeer, recipientOutOfService } from '../agents/out-of-service.js';
import type { LocalStackStartInput, LocalStackStatus } from '../client/api.js';
import type { LocalStackFiles } from '../client/local-stack/server-config.js';
import { DaemonError } from '../errors.js';
import type { InboundItem } from '../session/inbound.js';
import type { AgentSession } from '../session/session.js';
import { EdgeLink, type LocalDeliveryAnswer } from './edge-link.js';
import { LocalStack } from './supervisor.js';
import { prepareUplink, releaseSource, renewalDelayMs, type Uplink, uplinkIdentity } from './uplink.js';

/** A host name nats-server can listen on: letters, digits, dots and dashes. */
const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/;

/** After a failed renewal, try again this soon (or sooner, at a quarter of the creds' remaining life). */
const RENEW_RETRY_MS = 30_000;
/**
 * A leaf link that has not reached the hub for this long may be refusing the creds
 * (revoked by the relay, say those of an older relay, or damaged): new ones are fetched,
 * at most once per CUT_RENEW_EVERY_MS. Renewing while the hub is merely down costs a few
 * relay requests and changes nothing.
 */
const CUT_RENEW_AFTER_MS = 10_000;
const CUT_RENEW_EVERY_MS = 120_000;
/** How long `svc start` waits for the named sources to reach the hub before it answers. */
const START_CONNECT_WAIT_MS = 10_000;

export class LocalStackService {
  readonly #files: LocalStackFiles;
  readonly #agents: AgentManager;
  readonly #log: Logger;
  readonly #stack: LocalStack;
  #link: EdgeLink | undefined;
  /** the settings of the running server, to answer the same start again (cleared on stop) */
  #started: LocalStackStartInput | undefined;
  #uplink: { identity: AgentSession; info: Uplink; sources: Map<AgentSession, string> } | undefined;
  readonly #renewShare: number;
  #renewTimer: NodeJS.Timeout | undefined;
  #renewing: Promise<void> = Promise.resolve();
  /** Since when pulls have not reached the hub (undefined while they do). */
  #hubLostAt: number | undefined;
  #cutRenewedAt = Number.NEGATIVE_INFINITY;

  constructor(files: LocalStackFiles, agents: AgentManager, log: Logger, opts: { renewShare: number }) {
    this.#files = files;
    this.#agents = agents;
    this.#log = log;
    this.#stack = new LocalStack(files, log);
    this.#renewShare = opts.renewShare;
  }

  status(): LocalStackStatus {
    const status = this.#stack.status();
    const u = this.#uplink?.info;
    if (!status.running || !u) return status;
    return { ...status, inbox_prefix: u.inboxPrefix, sources: u.sources, creds_expire_at: u.expiresAt };
  }

  async start(input: LocalStackStartInput): Promise<LocalStackStatus> {
    // nats-server takes anything and fails at start, which read as a port taken by another process
    if (isIP(input.listen) === 0 && !HOST_NAME.test(input.listen)) {
      throw new DaemonError(
        'validation_failed',
        `The listen address ${JSON.stringify(input.listen)} is not an IP address or a host name (say 127.0.0.1).`,
      );
    }
    const base = { listen: input.listen, port: input.port, monitorPort: input.monitor_port };
    if (this.#stack.status().running) {
      // the same start again is done already, as `svc start` is for the daemon; only other
      // settings need the server stopped first
      if (this.#sameSettings(input)) return { ...this.status(), already_running: true };
      throw new DaemonError('local_stack_running');
    }
    let uplink: Uplink | undefined;
    let identity: AgentSession | undefined;
    if (!input.local_only) {
      identity = uplinkIdentity(this.#agents, input.as);
      mkdirSync(this.#files.dir, { recursive: true, mode: 0o700 });
      uplink = await prepareUplink(this.#agents, identity, this.#files.credsFile);
    }
    const status = await this.#stack.start({
      ...base,
      ...(uplink ? { uplink: { leafUrl: uplink.leafUrl, credsFile: uplink.credsFile } } : {}),
    });
    // recorded once the server runs: a failed start leaves no uplink behind
    if (uplink && identity) {
      this.#uplink = {
        identity,
        info: uplink,
        sources: new Map(uplink.claimed.map((c) => [c.session, c.durable])),
      };
    }
    try {
      const link = await EdgeLink.open(
        status.url as string,
        this.#stack.clientToken as string,
        uplink?.inboxPrefix,
        this.#log,
      );
      link.serveLocal((item) => this.#deliverLocally(item));
      link.onHub((reached) => this.#hubReached(reached));
      this.#link = link;
      this.#agents.edge = link;
      for (const [session, durable] of this.#uplink?.sources ?? []) await session.receiveThrough(link.source(durable));
      this.#scheduleRenewal(Date.parse(uplink?.expiresAt ?? ''));
      await this.#sourcesConnected(START_CONNECT_WAIT_MS);
    } catch (err) {
      await this.stop();
      throw new DaemonError('local_stack_failed', `cannot use the local nats-server: ${(err as Error).message}`, {
        cause: err,
      });
    }
    this.#started = input;
    return this.status();
  }

  /**
   * Waits, up to `ms`, until every agent receiving through a named source has reached the
   * hub: `svc start` then answers with a machine that receives (the leaf link comes up a
   * moment after the server). A hub that does not answer by then is reported by the status.
   */
  async #sourcesConnected(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    const waiting = () => [...(this.#uplink?.sources.keys() ?? [])].some((s) => s.state !== 'connected');
    while (waiting() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  }

  /** Whether `input` asks for the server that runs: same mode, ports, address and uplink identity. */
  #sameSettings(input: LocalStackStartInput): boolean {
    const s = this.#started;
    if (!s || s.local_only !== input.local_only || s.port !== input.port) return false;
    if (s.monitor_port !== input.monitor_port || s.listen !== input.listen) return false;
    return input.local_only || uplinkIdentity(this.#agents, input.as) === this.#uplink?.identity;
  }

  async stop(): Promise<boolean> {
    this.#started = undefined;
    this.#hubLostAt = undefined;
    clearTimeout(this.#renewTimer);
    this.#renewTimer = undefined;
    const sources = this.#uplink?.sources ?? new Map<AgentSession, string>();
    this.#uplink = undefined;
    this.#agents.edge = undefined;
    for (const session of sources.keys()) await session.receiveThrough(undefined);
    await this.#link?.close();
    this.#link = undefined;
    return this.#stack.stop();
  }

  /**
   * New uplink creds before the old ones expire (the relay revokes the old user; the local
   * server reads the rewritten file when its leaf reconnects), claiming on the way a
   * source for any local agent that has none yet. One renewal at a time.
   */
  renew(): Promise<void> {
    const run = this.#renewing.then(() => this.#renew());
    this.#renewing = run.catch(() => undefined);
    return run;
  }

  async #renew(): Promise<void> {
    const u = this.#uplink;
    const link = this.#link;
    if (!u || !link) return;
    try {
      const info = await prepareUplink(this.#agents, u.identity, this.#files.credsFile);
      if (this.#uplink !== u) return; // stopped meanwhile
      u.info = info;
      for (const { session, durable } of info.claimed) {
        if (u.sources.has(session)) continue;
        u.sources.set(session, durable);
        await session.receiveThrough(link.source(durable));
      }
      this.#log.info({ expires_at: info.expiresAt, sources: info.sources }, 'uplink creds renewed');
      this.#scheduleRenewal(Date.parse(info.expiresAt));
    } catch (err) {
      if (this.#uplink !== u) return;
      const remaining = Date.parse(u.info.expiresAt) - Date.now();
      // spread: after an outage of the relay, every edge's retry would otherwise land together
      const retry = Math.max(1_000, Math.min(RENEW_RETRY_MS, remaining / 4)) * (0.5 + Math.random());
      this.#log.warn({ err: (err as Error).message, retry_ms: retry }, 'uplink creds not renewed; retrying');
      this.#scheduleRenewal(undefined, retry);
    }
  }

  #scheduleRenewal(expiresAt: number | undefined, delay?: number): void {
    clearTimeout(this.#renewTimer);
    this.#renewTimer = undefined;
    if (!this.#uplink) return;
    const ms =
      delay ??
      (expiresAt === undefined || Number.isNaN(expiresAt)
        ? undefined
        : renewalDelayMs(expiresAt, Date.now(), this.#renewShare));
    if (ms === undefined) return;
    this.#renewTimer = setTimeout(() => void this.renew(), ms);
    this.#renewTimer.unref();
  }

  /** After each pull: a link that stays cut gets new creds (see CUT_RENEW_AFTER_MS). */
  #hubReached(reached: boolean): void {
    const now = Date.now();
    if (reached || !this.#uplink) {
      this.#hubLostAt = undefined;
      return;
    }
    this.#hubLostAt ??= now;
    if (now - this.#hubLostAt < CUT_RENEW_AFTER_MS || now - this.#cutRenewedAt < CUT_RENEW_EVERY_MS) return;
    this.#cutRenewedAt = now;
    this.#log.warn(
      { down_ms: now - this.#hubLostAt },
      'the leaf link does not reach the hub; fetching new uplink creds',
    );
    void this.renew();
  }

  /** A local agent registered while the uplink runs: it gets its named source now. */
  agentAdded(session: AgentSession): void {
    const u = this.#uplink;
    if (!u || session.config.deployment !== u.identity.config.deployment) return;
    if (!session.config.capabilities.includes('http-relay')) return;
    void this.renew();
  }

  /**
   * An agent's session was replaced by a new one (svc recover reset-db): the new session
   * receives through the named source the old one held, not through the relay's stream
   * until the daemon restarts.
   */
  async sessionReplaced(session: AgentSession): Promise<void> {
    const u = this.#uplink;
    const link = this.#link;
    const old = [...(u?.sources.keys() ?? [])].find((s) => s !== session && s.name === session.name);
    if (!u || !link || !old) return;
    const durable = u.sources.get(old) as string;
    u.sources.delete(old);
    u.sources.set(session, durable);
    await session.receiveThrough(link.source(durable));
  }

  /** An agent leaves this machine: its named source is given back and it stops pulling from it. */
  async forget(session: AgentSession): Promise<void> {
    const u = this.#uplink;
    const durable = u?.sources.get(session);
    if (!u || durable === undefined) return;
    u.sources.delete(session);
    await session.receiveThrough(undefined);
    try {
      await releaseSource(u.identity, session);
      u.info.sources = u.info.sources.filter((d) => d !== durable);
    } catch (err) {
      // it stays claimed until the agent is revoked on the relay (which releases it)
      this.#log.warn({ agent: session.name, err: (err as Error).message }, 'named source not released');
    }
  }

  /**
   * An envelope from another agent of this machine, through the local server: archived
   * for the recipient it names. The sender's key comes from the daemon's own session of
   * that agent (never from the message), and the envelope is verified with it as usual.
   */
  async #deliverLocally(item: InboundItem): Promise<LocalDeliveryAnswer> {
    const h = (item.envelope as { header?: Record<string, unknown> } | undefined)?.header;
    const recipient = this.#agents
      .sessions()
      .find(
        (s) =>
          s.config.agent_number === h?.recipient &&
          s.config.deployment_id === h?.deployment_id &&
          s.config.tenant_id === h?.tenant_id,
      );
    if (!recipient) {
      // one out of service: its code and the file, not "no such agent"
      const of = { deployment_id: String(h?.deployment_id), tenant_id: String(h?.tenant_id) };
      const out = outOfServicePeer(this.#agents.outOfService(), of, String(h?.recipient));
      if (out) {
        const err = recipientOutOfService(out);
        return { error: err.code, message: err.message };
      }
      return { error: 'unknown_recipient', message: 'no such agent on this machine' };
    }
    const sender = recipient.localPeer(item.sender);
    if (!sender) return { error: 'unknown_sender', message: 'the sender is not an agent of this machine' };
    if (!recipient.archive.getPeer(sender.config.agent_number)) {
      const keys = sender.keys();
      recipient.archive.pinPeer({
        agent_number: sender.config.agent_number,
        agent_id: sender.config.agent_id,
        signing_public_key: toBase64url(keys.signPublic),
        encryption_public_key: toBase64url(keys.encPublic),
        key_version: null,
      });
    }
    const outcome = await recipient.inbound.process(item);
    return { outcome, received_at: new Date().toISOString() };
  }
}
