/**
 * The least rows the ledger's foreign keys need, for the migration tests: a grant, and
 * agents enrolled under it (agent number = agent id; placeholder keys).
 */
import type { Sql } from '../../src/ledger/sql.js';

export async function insertGrant(db: Sql, id = 'g'): Promise<void> {
  await db.run(
    `INSERT INTO grants (id, tenant_id, agent_id, agent_number, capabilities, secret_hash, created_by, created_at, expires_at)
     VALUES (?, 't', 'a', 'a', '[]', 'h', 'x', 0, 1)`,
    [id],
  );
}

export async function insertAgent(
  db: Sql,
  row: string,
  o: { agentId?: string; tenant?: string; grant?: string; revokedAt?: number | null } = {},
): Promise<void> {
  const agentId = o.agentId ?? 'a';
  await db.run(
    `INSERT INTO agents (id, tenant_id, agent_id, agent_number, capabilities, signing_public_key, encryption_public_key, grant_id, created_at, revoked_at)
     VALUES (?, ?, ?, ?, '[]', 's', 'e', ?, 0, ?)`,
    [row, o.tenant ?? 't', agentId, agentId, o.grant ?? 'g', o.revokedAt ?? null],
  );
}
