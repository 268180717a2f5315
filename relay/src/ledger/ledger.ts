/**
 * The relay ledger: the database (SQLite or PostgreSQL, sql.ts), and the store of the
 * identity tables (grants, agent incarnations, API keys, challenges, bus users). Every
 * other area has a store class over the same database (stores.ts builds them all). Each
 * multi-step change is one transaction, and each single-use thing (a grant, a challenge)
 * is spent by one conditional UPDATE, so two relay instances on one PostgreSQL cannot
 * both spend it. Store failures surface as ledger_closed.
 */
import { type Capability, SvcError } from '@svc/shared';
import { type LedgerLocation, migrate, openSql } from './database.js';
import type { Sql, SqlDatabase } from './sql.js';

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
  readonly sql: SqlDatabase;

  private constructor(sql: SqlDatabase) {
    this.sql = sql;
  }

  /** Opens the ledger and applies the migrations it lacks (a file path means SQLite). */
  static async open(location: LedgerLocation | string): Promise<Ledger> {
    const sql = await openSql(typeof location === 'string' ? { sqlite: location } : location);
    try {
      await migrate(sql);
    } catch (err) {
      await sql.close().catch(() => undefined);
      throw err;
    }
    return new Ledger(sql);
  }

  /** A ledger over a database already migrated (tests that open two on one PostgreSQL). */
  static over(sql: SqlDatabase): Ledger {
    return new Ledger(sql);
  }

  close(): Promise<void> {
    return this.sql.close();
  }

  get isOpen(): boolean {
    return this.sql.isOpen;
  }

  /** ` FOR UPDATE` on PostgreSQL (SQLite's write transaction already excludes the others). */
  get forUpdate(): string {
    return this.sql.dialect === 'postgres' ? ' FOR UPDATE' : '';
  }

  /** A cheap query that proves the store answers (readiness). */
  async ping(): Promise<void> {
    await this.sql.get('SELECT 1');
  }

  /**
   * Throws ledger_closed when the ledger is closed, without a query: what every API request
   * checks first. A store that fails while open fails the request's own first query with
   * the same code; a query per request only to find that out cost PostgreSQL a round trip.
   */
  assertOpen(): void {
    if (!this.sql.isOpen) throw new SvcError('ledger_closed', undefined, { detail: 'the ledger is closed' });
  }

  /**
   * Ties the ledger to a deployment the first time one opens it, and refuses any other
   * deployment after that (`where`: how the ledger was named, for the message).
   */
  async claimFor(deploymentId: string, where: string): Promise<void> {
    await this.sql.run(
      'INSERT INTO ledger_deployment (singleton, deployment_id) VALUES (1, @id) ON CONFLICT DO NOTHING',
      { id: deploymentId },
    );
    const row = await this.sql.get<{ deployment_id: string }>(
      'SELECT deployment_id FROM ledger_deployment WHERE singleton = 1',
    );
    if (row !== undefined && row.deployment_id !== deploymentId) {
      throw new SvcError(
        'config_invalid',
        `the ledger ${where} belongs to deployment ${row.deployment_id}, not to this data dir's ${deploymentId}: each deployment needs a ledger of its own`,
      );
    }
  }

  // grants

  async insertGrant(g: Omit<GrantRow, 'consumed_at' | 'consumed_by' | 'revoked_at'>): Promise<void> {
    await this.sql.run(
      `INSERT INTO grants (id, tenant_id, agent_id, agent_number, capabilities, secret_hash, created_by, created_at, expires_at)
         VALUES (@id, @tenant_id, @agent_id, @agent_number, @capabilities, @secret_hash, @created_by, @created_at, @expires_at)`,
      {
        id: g.id,
        tenant_id: g.tenant_id,
        agent_id: g.agent_id,
        agent_number: g.agent_number,
        capabilities: JSON.stringify(g.capabilities),
        secret_hash: g.secret_hash,
        created_by: g.created_by,
        created_at: g.created_at,
        expires_at: g.expires_at,
      },
    );
  }

  async getGrant(id: string): Promise<GrantRow | undefined> {
    const r = await this.sql.get<Raw<GrantRow>>('SELECT * FROM grants WHERE id = ?', [id]);
    return r && grantFrom(r);
  }

  // agents

  async activeAgent(tenantId: string, agentId: string, q: Sql = this.sql): Promise<AgentRow | undefined> {
    const r = await q.get<Raw<AgentRow>>(
      'SELECT * FROM agents WHERE tenant_id = ? AND agent_id = ? AND revoked_at IS NULL',
      [tenantId, agentId],
    );
    return r && agentFrom(r);
  }

  async agentByRow(rowId: string): Promise<AgentRow | undefined> {
    const r = await this.sql.get<Raw<AgentRow>>('SELECT * FROM agents WHERE id = ?', [rowId]);
    return r && agentFrom(r);
  }

  /** Revoked incarnations of an agent id (or number) whose bus cleanup has not finished. */
  async pendingCleanups(tenantId?: string, agentId?: string, agentNumber?: string): Promise<AgentRow[]> {
    const rows =
      tenantId === undefined
        ? await this.sql.all<Raw<AgentRow>>('SELECT * FROM agents WHERE cleanup_pending = 1')
        : await this.sql.all<Raw<AgentRow>>(
            'SELECT * FROM agents WHERE cleanup_pending = 1 AND tenant_id = ? AND (agent_id = ? OR agent_number = ?)',
            [tenantId, agentId ?? null, agentNumber ?? null],
          );
    return rows.map(agentFrom);
  }

  async markCleanupDone(rowId: string): Promise<void> {
    await this.sql.run('UPDATE agents SET cleanup_pending = 0 WHERE id = ?', [rowId]);
  }

  /**
   * Consumes the grant and records the new incarnation atomically. A refusal (grant
   * consumed, revoked or expired meanwhile; agent id or number taken) spends nothing.
   * `keyRecord`: version 1 of the key directory as the identity signed it (migration 007).
   */
  async enroll(
    agent: NewAgent,
    apiKey: Omit<ApiKeyRow, 'revoked_at' | 'agent_row'>,
    keyRecord: EnrollmentKeyRecord,
    now: number,
  ): Promise<EnrollOutcome> {
    try {
      return await this.sql.transaction((tx) => this.#enroll(tx, agent, apiKey, keyRecord, now));
    } catch (err) {
      // NameTaken, or the active-id index refusing a twin enrolled by another relay meanwhile
      if (err instanceof NameTaken || uniqueViolation(err)) return 'name_taken';
      throw err;
    }
  }

  async #enroll(
    tx: Sql,
    agent: NewAgent,
    apiKey: Omit<ApiKeyRow, 'revoked_at' | 'agent_row'>,
    keyRecord: EnrollmentKeyRecord,
    now: number,
  ): Promise<EnrollOutcome> {
    // One conditional UPDATE: of two relays redeeming the grant at once, one changes the row.
    const consumed = await tx.run(
      'UPDATE grants SET consumed_at = ?, consumed_by = ? WHERE id = ? AND consumed_at IS NULL AND revoked_at IS NULL AND expires_at > ?',
      [now, agent.id, agent.grant_id, now],
    );
    if (consumed !== 1) return 'grant_unavailable';
    const taken = await tx.get(
      'SELECT 1 FROM agents WHERE tenant_id = ? AND (agent_id = ? OR agent_number = ?) AND revoked_at IS NULL',
      [agent.tenant_id, agent.agent_id, agent.agent_number],
    );
    if (taken) throw new NameTaken(); // rolls back the consumption
    await tx.run(
      `INSERT INTO agents (id, tenant_id, agent_id, agent_number, capabilities, signing_public_key, encryption_public_key,
           display_name, description, discoverable, grant_id, created_at)
         VALUES (@id, @tenant_id, @agent_id, @agent_number, @capabilities, @signing_public_key, @encryption_public_key,
           @display_name, @description, @discoverable, @grant_id, @created_at)`,
      {
        id: agent.id,
        tenant_id: agent.tenant_id,
        agent_id: agent.agent_id,
        agent_number: agent.agent_number,
        capabilities: JSON.stringify(agent.capabilities),
        signing_public_key: agent.signing_public_key,
        encryption_public_key: agent.encryption_public_key,
        display_name: agent.display_name,
        description: agent.description,
        discoverable: agent.discoverable ? 1 : 0,
        grant_id: agent.grant_id,
        created_at: agent.created_at,
      },
    );
    await insertApiKey(tx, { ...apiKey, agent_row: agent.id });
    await tx.run(
      `INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at,
         signature, previous_signature, recorded_at)
       VALUES (?, 1, ?, ?, ?, ?, NULL, ?)`,
      [agent.id, agent.signing_public_key, agent.encryption_public_key, keyRecord.created_at, keyRecord.signature, now],
    );
    return 'enrolled';
  }

  /** Marks the active incarnation revoked, its keys dead, cleanup pending (its challenges find no active agent). */
  revokeAgent(tenantId: string, agentId: string, now: number): Promise<AgentRow | undefined> {
    return this.sql.transaction(async (tx): Promise<AgentRow | undefined> => {
      const row = await this.activeAgent(tenantId, agentId, tx);
      if (!row) return undefined;
      // conditional: of two revocations at once, one does it and the other finds nothing
      if (
        (await tx.run('UPDATE agents SET revoked_at = ?, cleanup_pending = 1 WHERE id = ? AND revoked_at IS NULL', [
          now,
          row.id,
        ])) !== 1
      )
        return undefined;
      await tx.run('UPDATE api_keys SET revoked_at = ? WHERE agent_row = ? AND revoked_at IS NULL', [now, row.id]);
      return { ...row, revoked_at: now, cleanup_pending: true };
    });
  }

  // API keys

  /** Issues a new key for the incarnation and retires its earlier ones. */
  replaceApiKey(k: Omit<ApiKeyRow, 'revoked_at'>): Promise<void> {
    return this.sql.transaction(async (tx) => {
      await tx.run('UPDATE api_keys SET revoked_at = ? WHERE agent_row = ? AND revoked_at IS NULL', [
        k.created_at,
        k.agent_row,
      ]);
      await insertApiKey(tx, k);
    });
  }

  apiKey(hash: string): Promise<ApiKeyRow | undefined> {
    return this.sql.get<ApiKeyRow>('SELECT * FROM api_keys WHERE hash = ?', [hash]);
  }

  // challenges

  /**
   * Spends a challenge id once, whichever relay instance asks: true for the first caller.
   * The row (kept until the challenge expires) is the only trace of a challenge, written
   * after its signature verified.
   */
  async spendChallenge(id: string, agentRow: string, expiresAt: number, now: number): Promise<boolean> {
    await this.pruneChallenges(now);
    const n = await this.sql.run(
      `INSERT INTO challenges (id, agent_row, nonce, created_at, expires_at, consumed_at)
       VALUES (?, ?, '', ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
      [id, agentRow, now, expiresAt, now],
    );
    return n === 1;
  }

  async pruneChallenges(now: number): Promise<void> {
    await this.sql.run('DELETE FROM challenges WHERE expires_at <= ?', [now]);
  }

  // bus users

  busUsersOf(agentRow: string): Promise<Array<{ public_key: string; tenant_id: string }>> {
    return this.sql.all('SELECT public_key, tenant_id FROM bus_users WHERE agent_row = ? AND revoked_at IS NULL', [
      agentRow,
    ]);
  }

  async markBusUsersRevoked(agentRow: string, now: number): Promise<void> {
    await this.sql.run('UPDATE bus_users SET revoked_at = ? WHERE agent_row = ? AND revoked_at IS NULL', [
      now,
      agentRow,
    ]);
  }
}

function insertApiKey(tx: Sql, k: Omit<ApiKeyRow, 'revoked_at'>): Promise<number> {
  return tx.run('INSERT INTO api_keys (hash, agent_row, created_at, expires_at) VALUES (?, ?, ?, ?)', [
    k.hash,
    k.agent_row,
    k.created_at,
    k.expires_at,
  ]);
}

/** A unique constraint refused the row (SQLite or PostgreSQL). */
export function uniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string }).code ?? '';
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export type EnrollOutcome = 'enrolled' | 'grant_unavailable' | 'name_taken';

class NameTaken extends Error {
  constructor() {
    super('agent id or number already enrolled');
    this.name = 'NameTaken';
  }
}
