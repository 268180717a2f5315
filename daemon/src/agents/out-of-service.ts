/**
 * A peer of this machine that is out of service (its archive or agent.json cannot be used),
 * as a recipient: a message for it cannot be delivered here, and the sender is told so with
 * its code and the file, not that no such agent exists.
 */
import { DaemonError } from '../errors.js';
import { LOCAL_DEPLOYMENT } from './local-agent.js';
import type { OutOfServiceAgent } from './manager.js';
import type { AgentConfig } from './store.js';

/**
 * The agent out of service that `agentNumber` names for a sender of deployment and tenant
 * `of`. One whose agent.json cannot be read has no known number: a local agent's number is
 * its name, so for a local sender its name stands for it.
 */
export function outOfServicePeer(
  out: readonly OutOfServiceAgent[],
  of: Pick<AgentConfig, 'deployment_id' | 'tenant_id'>,
  agentNumber: string,
): OutOfServiceAgent | undefined {
  return out.find((o) =>
    o.config
      ? o.config.agent_number === agentNumber &&
        o.config.deployment_id === of.deployment_id &&
        o.config.tenant_id === of.tenant_id
      : of.deployment_id === LOCAL_DEPLOYMENT && o.name === agentNumber,
  );
}

/**
 * A command for an agent out of service: its code (archive_unusable, config_invalid) and
 * its message, naming the file; `more` is said after it.
 */
export function agentOutOfService(o: OutOfServiceAgent, more = ''): DaemonError {
  return new DaemonError(o.error.code, `Agent ${o.name} is out of service: ${o.error.message}${more}`, {
    cause: o.error,
  });
}

/** The recipient out of service: its code (archive_unusable, config_invalid) and its message, naming the file. */
export function recipientOutOfService(o: OutOfServiceAgent): DaemonError {
  return new DaemonError(
    o.error.code,
    `The recipient ${o.name} is out of service on this machine: ${o.error.message}`,
    {
      cause: o.error,
    },
  );
}
