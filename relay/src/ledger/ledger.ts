/**
 * The relay ledger: the SQLite connection, and the store of the identity tables (grants,
 * agent incarnations, API keys, challenges, bus users). Every other area has a store class
 * over this connection (stores.ts builds them all). Synchronous SQLite; each multi-step
 * change is one transaction. All access goes through `guarded`, so a store failure
 * surfaces as ledger_closed.
 */
import type { Capability } from '@svc/shared';
import type Database from 'better-sqlite3';
import { type Db, guard, migrate, openDatabase } from './database.js';

export interface GrantRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  agent_number: string;
  capabilities: Capability[];
  secret_hash: string;
  created_by: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
  consumed_by: string | null;
  revoked_at: number | null;
}

export interface AgentRow {
  id: string;
  tenant_id: string;
  agent_id: string;
  agent_number: string;
  capabilities: Capability[];
  signing_public_key: string;
  encryption_public_key: string;
  display_name: string | null;
  description: string | null;
  discoverable: boolean;
  grant_id: string;
  created_at: number;
  revoked_at: number | null;
  cleanup_pending: boolean;
}

export interface ApiKeyRow {
  hash: string;
  agent_row: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface ChallengeRow {
  id: string;
  agent_row: string;
  nonce: string;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

type Raw<T> = { [K in keyof T]: T[K] extends boolean ? number : T[K] extends Capability[] ? string : T[K] };

const grantFrom = (r: Raw<GrantRow>): GrantRow => ({ ...r, capabilities: JSON.parse(r.capabilities) as Capability[] });
const agentFrom = (r: Raw<AgentRow>): AgentRow => ({
  ...r,
  capabilities: JSON.parse(r.capabilities) as Capability[],
  discoverable: r.discoverable === 1,
  cleanup_pending: r.cleanup_pending === 1,
});

export type NewAgent = Omit<AgentRow, 'revoked_at' | 'cleanup_pending'>;

/** Key record version 1, signed by the enrolling identity (created_at exactly as signed). */
export interface EnrollmentKeyRecord {
  created_at: string;
  signature: string;
}

export class Ledger {
  readonly db: Db;

  private constructor(db: Db) {
    this.db = db;
  }

  static open(file: string): Ledger {
    const db = openDatabase(file);
    migrate(db);
    return new Ledger(db);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  get isOpen(): boolean {
    return this.db.open;
  }

  /** A cheap query that proves the store answers. */
  ping(): void {
    guard(this.db, () => this.stmt('SELECT 1').get());
  }

  readonly #statements = new Map<string, Database.Statement>();

  /** A prepared statement, compiled once per SQL text (preparing costs more than running). */
  stmt(sql: string): Database.Statement {
    let st = this.#statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.#statements.set(sql, st);
    }
    return st;
  }

  /** Runs a ledger operation; store failures become ledger_closed. Domain stores beside this one use it. */
  guarded<T>(fn: () => T): T {
    return guard(this.db, fn);
  }

  // grants

  insertGrant(g: Omit<GrantRow, 'consumed_at' | 'consumed_by' | 'revoked_at'>): void {
    this.guarded(() =>
      this.stmt(
        `INSERT INTO grants (id, tenant_id, agent_id, agent_number, capabilities, secret_hash, created_by, created_at, expires_at)
           VALUES (@id, @tenant_id, @agent_id, @agent_number, @capabilities, @secret_hash, @created_by, @created_at, @expires_at)`,
      ).run({ ...g, capabilities: JSON.stringify(g.capabilities) }),
    );
  }

  getGrant(id: string): GrantRow | undefined {
    return this.guarded(() => {
      const r = this.stmt('SELECT * FROM grants WHERE id = ?').get(id) as Raw<GrantRow> | undefined;
      return r && grantFrom(r);
    });
  }

  // agents

  activeAgent(tenantId: string, agentId: string): AgentRow | undefined {
    return this.guarded(() => {
      const r = this.stmt('SELECT * FROM agents WHERE tenant_id = ? AND agent_id = ? AND revoked_at IS NULL').get(
        tenantId,
        agentId,
      ) as Raw<AgentRow> | undefined;
      return r && agentFrom(r);
    });
  }

  agentByRow(rowId: string): AgentRow | undefined {
    return this.guarded(() => {
      const r = this.stmt('SELECT * FROM agents WHERE id = ?').get(rowId) as Raw<AgentRow> | undefined;
      return r && agentFrom(r);
    });
  }

  /** Revoked incarnations of an agent id (or number) whose bus cleanup has not finished. */
  pendingCleanups(tenantId?: string, agentId?: string, agentNumber?: string): AgentRow[] {
    return this.guarded(() => {
      const rows =
        tenantId === undefined
          ? this.stmt('SELECT * FROM agents WHERE cleanup_pending = 1').all()
          : this.db
              .prepare(
                'SELECT * FROM agents WHERE cleanup_pending = 1 AND tenant_id = ? AND (agent_id = ? OR agent_number = ?)',
              )
              .all(tenantId, agentId, agentNumber);
      return (rows as Raw<AgentRow>[]).map(agentFrom);
    });
  }

  markCleanupDone(rowId: string): void {
    this.guarded(() => this.stmt('UPDATE agents SET cleanup_pending = 0 WHERE id = ?').run(rowId));
  }

  /**
   * Consumes the grant and records the new incarnation atomically. A refusal (grant
   * consumed, revoked or expired meanwhile; agent id or number taken) spends nothing.
   */
  /** `keyRecord`: version 1 of the key directory as the identity signed it (migration 007). */
  enroll(
    agent: NewAgent,
    apiKey: Omit<ApiKeyRow, 'revoked_at' | 'agent_row'>,
    keyRecord: EnrollmentKeyRecord,
    now: number,
  ): EnrollOutcome {
    try {
      return this.enrollTx(agent, apiKey, keyRecord, now);
    } catch (err) {
      if (err instanceof NameTaken) return 'name_taken';
      throw err;
    }
  }

  private enrollTx(
    agent: NewAgent,
    apiKey: Omit<ApiKeyRow, 'revoked_at' | 'agent_row'>,
    keyRecord: EnrollmentKeyRecord,
    now: number,
  ): EnrollOutcome {
    return this.guarded(() =>
      this.db.transaction((): EnrollOutcome => {
        const consumed = this.stmt(
          'UPDATE grants SET consumed_at = ?, consumed_by = ? WHERE id = ? AND consumed_at IS NULL AND revoked_at IS NULL AND expires_at > ?',
        ).run(now, agent.id, agent.grant_id, now);
        if (consumed.changes !== 1) return 'grant_unavailable';
        const taken = this.stmt(
          'SELECT 1 FROM agents WHERE tenant_id = ? AND (agent_id = ? OR agent_number = ?) AND revoked_at IS NULL',
        ).get(agent.tenant_id, agent.agent_id, agent.agent_number);
        if (taken) {
          throw new NameTaken(); // rolls back the consumption
        }
        this.stmt(
          `INSERT INTO agents (id, tenant_id, agent_id, agent_number, capabilities, signing_public_key, encryption_public_key,
               display_name, description, discoverable, grant_id, created_at)
             VALUES (@id, @tenant_id, @agent_id, @agent_number, @capabilities, @signing_public_key, @encryption_public_key,
               @display_name, @description, @discoverable, @grant_id, @created_at)`,
        ).run({
          ...agent,
          capabilities: JSON.stringify(agent.capabilities),
          discoverable: agent.discoverable ? 1 : 0,
        });
        this.insertApiKeyRaw({ ...apiKey, agent_row: agent.id });
        this.stmt(
          `INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at,
             signature, previous_signature, recorded_at)
           VALUES (?, 1, ?, ?, ?, ?, NULL, ?)`,
        ).run(
          agent.id,
          agent.signing_public_key,
          agent.encryption_public_key,
          keyRecord.created_at,
          keyRecord.signature,
          now,
        );
        return 'enrolled';
      })(),
    );
  }

  /** Marks the active incarnation revoked, its keys and challenges dead, cleanup pending. */
  revokeAgent(tenantId: string, agentId: string, now: number): AgentRow | undefined {
    return this.guarded(() =>
      this.db.transaction((): AgentRow | undefined => {
        const row = this.activeAgent(tenantId, agentId);
        if (!row) return undefined;
        this.stmt('UPDATE agents SET revoked_at = ?, cleanup_pending = 1 WHERE id = ?').run(now, row.id);
        this.stmt('UPDATE api_keys SET revoked_at = ? WHERE agent_row = ? AND revoked_at IS NULL').run(now, row.id);
        this.stmt('UPDATE challenges SET consumed_at = ? WHERE agent_row = ? AND consumed_at IS NULL').run(now, row.id);
        return { ...row, revoked_at: now, cleanup_pending: true };
      })(),
    );
  }

  // API keys

  private insertApiKeyRaw(k: Omit<ApiKeyRow, 'revoked_at'>): void {
    this.db
      .prepare(
        'INSERT INTO api_keys (hash, agent_row, created_at, expires_at) VALUES (@hash, @agent_row, @created_at, @expires_at)',
      )
      .run(k);
  }

  /** Issues a new key for the incarnation and retires its earlier ones. */
  replaceApiKey(k: Omit<ApiKeyRow, 'revoked_at'>): void {
    this.guarded(() =>
      this.db.transaction(() => {
        this.stmt('UPDATE api_keys SET revoked_at = ? WHERE agent_row = ? AND revoked_at IS NULL').run(
          k.created_at,
          k.agent_row,
        );
        this.insertApiKeyRaw(k);
      })(),
    );
  }

  apiKey(hash: string): ApiKeyRow | undefined {
    return this.guarded(() => this.stmt('SELECT * FROM api_keys WHERE hash = ?').get(hash) as ApiKeyRow | undefined);
  }

  // challenges

  insertChallenge(c: Omit<ChallengeRow, 'consumed_at'>): void {
    this.guarded(() =>
      this.stmt(
        'INSERT INTO challenges (id, agent_row, nonce, created_at, expires_at) VALUES (@id, @agent_row, @nonce, @created_at, @expires_at)',
      ).run(c),
    );
  }

  /** Single use: returns the challenge only to the first caller. */
  consumeChallenge(id: string, now: number): ChallengeRow | undefined {
    return this.guarded(() =>
      this.db.transaction((): ChallengeRow | undefined => {
        const row = this.stmt('SELECT * FROM challenges WHERE id = ?').get(id) as ChallengeRow | undefined;
        if (!row || row.consumed_at !== null) return undefined;
        this.stmt('UPDATE challenges SET consumed_at = ? WHERE id = ?').run(now, id);
        return row;
      })(),
    );
  }

  /**
   * The challenge table is kept bounded: expired rows go at every new challenge, each agent
   * keeps at most `perAgent` live ones (a newer replaces the oldest, so a flood of requests
   * for one agent never refuses, and so never tells, anything), and the table as a whole at
   * most `max` (past it, requests for every agent id, known or not, are turned away).
   * Drops expired challenges; true when the table still holds `max` or more live ones.
   */
  challengeTableFull(max: number, now: number): boolean {
    return this.guarded(() => {
      this.stmt('DELETE FROM challenges WHERE expires_at <= ?').run(now);
      const { n } = this.stmt('SELECT count(*) AS n FROM challenges').get() as { n: number };
      return n >= max;
    });
  }

  /** Stores the challenge, first dropping the agent's oldest ones past `perAgent - 1`. */
  insertBoundedChallenge(c: Omit<ChallengeRow, 'consumed_at'>, perAgent: number): void {
    this.guarded(() =>
      this.db.transaction(() => {
        this.stmt(
          `DELETE FROM challenges WHERE id IN (
             SELECT id FROM challenges WHERE agent_row = ? ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)`,
        ).run(c.agent_row, Math.max(0, perAgent - 1));
        this.insertChallenge(c);
      })(),
    );
  }

  pruneChallenges(now: number): void {
    this.guarded(() => this.stmt('DELETE FROM challenges WHERE expires_at <= ?').run(now));
  }

  // bus users

  busUsersOf(agentRow: string): Array<{ public_key: string; tenant_id: string }> {
    return this.guarded(
      () =>
        this.stmt('SELECT public_key, tenant_id FROM bus_users WHERE agent_row = ? AND revoked_at IS NULL').all(
          agentRow,
        ) as Array<{
          public_key: string;
          tenant_id: string;
        }>,
    );
  }

  markBusUsersRevoked(agentRow: string, now: number): void {
    this.guarded(() =>
      this.stmt('UPDATE bus_users SET revoked_at = ? WHERE agent_row = ? AND revoked_at IS NULL').run(now, agentRow),
    );
  }
}

export type EnrollOutcome = 'enrolled' | 'grant_unavailable' | 'name_taken';

class NameTaken extends Error {
  constructor() {
    super('agent id or number already enrolled');
    this.name = 'NameTaken';
  }
}
