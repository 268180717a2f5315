/**
 * Revocation of an agent incarnation and the cleanup it needs on the bus: its NATS
 * users (an edge's uplink users) are revoked in their account JWT and its undelivered envelopes (sealed
 * to keys that are now dead) are purged. Cleanup that cannot finish stays pending;
 * re-enrollment of the same agent id waits for it (503 revocation_unavailable).
 */

import { jetstreamManager } from '@nats-io/jetstream';
import { SvcError } from '@svc/shared';
import { MSGS_STREAM } from '../bus/index.js';
import type { RelayBase } from '../context.js';
import type { AgentRow } from '../ledger/ledger.js';
import { releaseSourcesOf } from './sources.js';

type Ctx = Pick<RelayBase, 'config' | 'ledger' | 'stores' | 'bus' | 'logger' | 'now' | 'sourceClaims'>;

export async function cleanupIncarnation(ctx: Ctx, row: AgentRow): Promise<void> {
  const bus = ctx.bus;
  // Its named sources first (as the streamed agent or as the edge): a failure here is
  // source_cleanup_failed, and the incarnation stays pending.
  await releaseSourcesOf(ctx, row);
  try {
    const users = await ctx.ledger.busUsersOf(row.id);
    if (users.length > 0) {
      // the only users minted for an incarnation are an edge's uplink users, in its uplink
      // account (which imports nothing now: its sources were released above); one minted by
      // an older relay, in the tenant account, is revoked there as well
      await bus.publishUplink(
        row.tenant_id,
        row.id,
        await ctx.stores.sources.durablesOfEdge(row.id),
        users.map((u) => u.public_key),
      );
      await ctx.ledger.markBusUsersRevoked(row.id, ctx.now());
    }
    const nc = await bus.tenantConnection(row.tenant_id);
    const jsm = await jetstreamManager(nc, { timeout: 2000 });
    await jsm.streams.purge(MSGS_STREAM, { filter: `msg.${row.agent_number}` });
    await ctx.stores.messages.forgetRecipient(row.id);
  } catch (err) {
    if (err instanceof SvcError && err.code === 'ledger_closed') throw err;
    ctx.logger.warn({ agent_row: row.id, err: (err as Error).message }, 'revocation cleanup could not finish');
    throw new SvcError('revocation_unavailable', undefined, { detail: (err as Error).message, cause: err });
  }
  await ctx.ledger.markCleanupDone(row.id);
  ctx.logger.info({ agent_row: row.id, tenant_id: row.tenant_id }, 'revocation cleanup finished');
}

/**
 * Tells of each revoked incarnation once per process, however many rounds its cleanup
 * takes: a cleanup the bus keeps failing would otherwise re-announce it every round.
 * What it remembers is what is still pending, so it stays as small as that.
 */
export class RevocationNews {
  readonly #told = new Set<string>();
  readonly #tell: (row: AgentRow) => void;

  constructor(tell: (row: AgentRow) => void) {
    this.#tell = tell;
  }

  /** `pending`: every incarnation whose cleanup is still pending, as of this round. */
  round(pending: readonly AgentRow[]): void {
    const ids = new Set(pending.map((r) => r.id));
    for (const id of this.#told) if (!ids.has(id)) this.#told.delete(id);
    for (const row of pending) {
      if (this.#told.has(row.id)) continue;
      this.#told.add(row.id);
      this.#tell(row);
    }
  }
}

/**
 * Finishes every pending cleanup it can; failures stay pending for the next round.
 * `news` hears of each incarnation first: one the operator revoked offline
 * (`svc-relay agent revoke`) is seen here, within a round.
 */
export async function runPendingCleanups(ctx: Ctx, news?: RevocationNews): Promise<number> {
  let done = 0;
  const rows = await ctx.ledger.pendingCleanups();
  // all told first: a cleanup that takes its time delays no other incarnation's news
  news?.round(rows);
  for (const row of rows) {
    try {
      await cleanupIncarnation(ctx, row);
      done++;
    } catch {
      // logged in cleanupIncarnation; retried on the next round
    }
  }
  return done;
}
