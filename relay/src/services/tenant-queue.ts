/**
 * One piece of work at a time per tenant: the next call for a tenant starts after every
 * earlier one for it has settled (failed or not). Named-source claims use it so that two
 * claims can never both take a tenant's last slot. Built once per relay (createRelay), so
 * two relays in one process never wait on each other.
 */
export class TenantQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(tenantId: string, fn: () => Promise<T>): Promise<T> {
    const next = (this.#tails.get(tenantId) ?? Promise.resolve()).then(fn);
    const settled = next.catch(() => undefined);
    this.#tails.set(tenantId, settled);
    void settled.then(() => {
      // the last one out leaves no entry behind
      if (this.#tails.get(tenantId) === settled) this.#tails.delete(tenantId);
    });
    return next;
  }

  /** Tenants with work queued or running (for tests: the map does not grow). */
  get size(): number {
    return this.#tails.size;
  }
}
