/**
 * The in-process relay of the agent route tests: tenants acme and globex, with alice and
 * bob (number `bob`, id `bob.agent:1`) in acme and eve in globex, each enrolled with a
 * display name of `Agent <id>`. Tests enroll more with `enroll`.
 */
import { type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';

export interface TwoTenants {
  relay: InProcessRelay;
  /** an agent's access token */
  enroll(tenant: string, agentId: string, agentNumber?: string): Promise<string>;
  alice: string;
  bob: string;
  eve: string;
}

/** `eveNumber` gives eve an agent number of acme too (tenants must keep them apart). */
export async function twoTenants(options: { eveNumber?: string } = {}): Promise<TwoTenants> {
  const relay = await inProcessRelay({ tenants: ['acme', 'globex'] });
  const enroll = async (tenant: string, agentId: string, agentNumber?: string) =>
    (await relay.enroll(tenant, agentId, { agentNumber, displayName: `Agent ${agentId}` })).token;
  return {
    relay,
    enroll,
    alice: await enroll('acme', 'alice'),
    bob: await enroll('acme', 'bob.agent:1', 'bob'),
    eve: await enroll('globex', 'eve', options.eveNumber),
  };
}
