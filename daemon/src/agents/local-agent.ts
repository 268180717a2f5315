/**
 * `svc register --local`: an agent of this machine only. No relay, no enrollment, no
 * login: a fresh identity in the vault, bound to the pseudo-deployment `local`. It reaches
 * the other local agents through the machine's nats-server with the same signed and
 * sealed envelopes as any agent, and nothing else.
 */
import { AGENT_NUMBER_PATTERN, toBase64url } from '@svc/shared';
import { deriveIdentityKeys } from '@svc/shared/node';
import type { LocalRegisterInput } from '../client/api.js';
import { DaemonError } from '../errors.js';
import { isLocalName } from '../paths.js';
import { newSeed, storeSeed, type Vault } from '../vault/index.js';
import type { AgentConfig } from './store.js';

/** Deployment and tenant id of local agents (a relay's ids never take this form: `dep_…`). */
export const LOCAL_DEPLOYMENT = 'local';
/** The capability that marks a local agent: no relay route, no relay session. */
export const LOCAL_CAPABILITY = 'local';

export const isLocalOnly = (c: Pick<AgentConfig, 'capabilities'>): boolean => c.capabilities.includes(LOCAL_CAPABILITY);

export function createLocalAgent(opts: {
  input: LocalRegisterInput;
  vault: Vault;
  exists: (name: string) => boolean;
}): AgentConfig {
  const name = opts.input.name;
  // the name is also the agent number other local agents address it by
  if (!isLocalName(name) || !AGENT_NUMBER_PATTERN.test(name))
    throw new DaemonError('validation_failed', `invalid local agent name ${name} (letters, digits, _ and -)`);
  if (opts.exists(name))
    throw new DaemonError('validation_failed', `a local agent named ${name} exists; choose --name`);
  const seed = newSeed();
  const keys = deriveIdentityKeys(seed, 0);
  storeSeed(opts.vault, name, seed);
  return {
    name,
    agent_id: name,
    agent_number: name,
    tenant_id: LOCAL_DEPLOYMENT,
    deployment: LOCAL_DEPLOYMENT,
    deployment_id: LOCAL_DEPLOYMENT,
    api_url: '',
    capabilities: [LOCAL_CAPABILITY],
    signing_public_key: toBase64url(keys.signPublic),
    encryption_public_key: toBase64url(keys.encPublic),
    registered_at: new Date().toISOString(),
    rotation: 0,
  };
}
