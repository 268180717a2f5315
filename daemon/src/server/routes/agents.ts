import { parseEnrollmentCode } from '@svc/shared';
import type { Logger } from 'pino';
import { acceptPeerKey, backfillKeys, generateKeys, keyStatus, uploadSigning } from '../../agents/keys.js';
import { createLocalAgent, isLocalOnly } from '../../agents/local-agent.js';
import type { OutOfServiceAgent } from '../../agents/manager.js';
import { register } from '../../agents/register.js';
import { localAgent } from '../../agents/store.js';
import { DAEMON_API as API } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { DaemonError, RelayError } from '../../errors.js';
import type { AgentRelay } from '../../session/agent-relay.js';
import { AgentSession } from '../../session/session.js';
import { type DaemonApp, route } from './route.js';

/** How long a registration that asks waits for the new agent to receive. */
const RECEIVE_WAIT_MS = 10_000;

/**
 * Deregistration revokes the agent's own credentials on the relay before anything is
 * forgotten here, so nobody can write to it any more and its keys are useless. A relay
 * that no longer knows the agent (401/403/404) has nothing left to revoke.
 */
async function revokeSelf(relay: AgentRelay, log: Logger, agent: string): Promise<void> {
  try {
    await relay.call({ method: 'POST', path: '/api/v1/agents/me/revoke', timeoutMs: 15_000 });
    log.info({ agent }, 'agent revoked on the relay');
  } catch (err) {
    if (err instanceof RelayError && [401, 403, 404].includes(err.relayStatus)) {
      log.info({ agent, code: err.relayErrorCode }, 'relay no longer knows the agent');
      return;
    }
    throw err;
  }
}

/**
 * Deregistration of an agent out of service. One whose archive cannot be used still has its
 * config and credentials: it revokes itself as usual. One whose agent.json cannot be read
 * has no known relay, so it can only be forgotten here (revoke=false).
 */
async function deregisterOutOfService(ctx: DaemonContext, out: OutOfServiceAgent, revoke: boolean): Promise<void> {
  if (revoke && !out.config) {
    throw new DaemonError(
      'config_invalid',
      `Agent ${out.name}'s agent.json cannot be read, so it cannot be revoked from this machine: \`svc deregister ${out.name} --local\` forgets it here (its directory is set aside, not deleted) and, if it was enrolled on a relay, that relay's operator revokes it (svc-relay agent revoke).`,
      { cause: out.error },
    );
  }
  const onRelay = revoke && out.config && !isLocalOnly(out.config) ? out.config : undefined;
  if (onRelay) await revokeSelf(ctx.agents.relayOf(onRelay), ctx.log, out.name);
  await removeHere(ctx, out.name, onRelay !== undefined);
}

/** Forgets the agent here, after any revocation; a directory that cannot be set aside says what the agent's state is and what to do. */
async function removeHere(ctx: DaemonContext, name: string, revoked: boolean): Promise<void> {
  try {
    await ctx.agents.remove(name);
  } catch (err) {
    if (!(err instanceof DaemonError) || err.code !== 'home_not_writable') throw err;
    throw new DaemonError(
      'home_not_writable',
      `${err.message.slice(0, -1)}${revoked ? ', though its relay has revoked it' : ''}. Make that directory and its parent writable (or free the disk), then run \`svc deregister ${name}${revoked ? ' --local' : ''}\` again.`,
      { cause: err },
    );
  }
}

export function agentRoutes(app: DaemonApp, ctx: DaemonContext): void {
  const agent = (request: { params: { agent: string } }) => ctx.agents.resolve(request.params.agent);

  route(app, API.register, async (request, reply) => {
    const input = request.body;
    let deploymentName = input.deployment;
    if (deploymentName === undefined) {
      let bindings: { deployment_id: string; api_url: string };
      try {
        bindings = parseEnrollmentCode(input.enrollment_code).bindings;
      } catch (err) {
        throw new DaemonError('validation_failed', (err as Error).message);
      }
      const deploymentId = bindings.deployment_id;
      const found = ctx.deployments.store.byDeploymentId(deploymentId);
      if (!found) {
        // the command in full: the relay's URL is in the code (the bundle, from the operator, vouches for it)
        const url = /^https?:\/\/[^\s'"`$\\]+$/.test(bindings.api_url) ? bindings.api_url : 'URL';
        throw new DaemonError(
          'unknown_deployment',
          `The code is for deployment ${deploymentId}, which is not trusted here; first run \`svc deployment fetch --url ${url} --trust TRUST_BUNDLE_FILE\` with the trust bundle the operator gave you, then register again.`,
        );
      }
      deploymentName = found.name;
    }
    const deployment = ctx.deployments.get(deploymentName);
    const { config, answer } = await register({
      input,
      deployment,
      vault: ctx.vault,
      exists: (n) => ctx.agents.exists(n),
    });
    const session = ctx.agents.add(config, answer);
    ctx.localStack.agentAdded(session);
    // a leaf uplink identity (nats-relay alone) has no relay session to wait for
    if (!input.wait_receiving || !config.capabilities.includes('http-relay')) {
      return reply.status(201).send(localAgent(config));
    }
    // the agent is registered whatever happens next: the wait only says whether it receives yet
    const receiving = await session.whenReceiving(RECEIVE_WAIT_MS);
    const why = receiving ? undefined : session.lastError;
    return reply.status(201).send({ ...localAgent(config), receiving, ...(why ? { session_error: why } : {}) });
  });

  route(app, API.registerLocal, async (request, reply) => {
    const config = createLocalAgent({ input: request.body, vault: ctx.vault, exists: (n) => ctx.agents.exists(n) });
    ctx.agents.add(config);
    return reply.status(201).send(localAgent(config));
  });

  route(app, API.listAgents, async () => ctx.agents.configs().map(localAgent));
  route(app, API.getAgent, async (request) => localAgent(agent(request).config));
  route(app, API.deregister, async (request) => {
    // revoke=false: forget locally only (a relay that is gone for good); the credentials stay
    // valid there. A local agent has no relay to revoke it on.
    const revoke = request.query.revoke !== false;
    const found = ctx.agents.find(request.params.agent);
    if (!(found instanceof AgentSession)) {
      await deregisterOutOfService(ctx, found, revoke);
      return {};
    }
    // its named source first, while the uplink may still speak for it
    await ctx.localStack.forget(found);
    const revoked = revoke && !isLocalOnly(found.config);
    if (revoked) await revokeSelf(found.relay, found.log, found.name);
    await removeHere(ctx, found.name, revoked);
    return {};
  });
  route(app, API.token, async (request) => agent(request).credentials.accessToken());
  route(app, API.keys, async (request) => keyStatus(agent(request)));
  route(app, API.generateKeys, async (request) => generateKeys(agent(request)));
  route(app, API.uploadSigningKey, async (request) => uploadSigning(agent(request)));
  route(app, API.backfillKeys, async (request) => backfillKeys(agent(request), request.body.dry_run === true));
  route(app, API.acceptPeerKey, async (request) => acceptPeerKey(agent(request), request.params.number));
}
