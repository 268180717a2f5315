import { Type } from '@sinclair/typebox';
import { parseEnrollmentCode } from '@svc/shared';
import type { FastifyInstance } from 'fastify';
import { acceptPeerKey, generateKeys, keyStatus, uploadSigning } from '../../agents/keys.js';
import { createLocalAgent, isLocalOnly } from '../../agents/local-agent.js';
import { register } from '../../agents/register.js';
import { localAgent } from '../../agents/store.js';
import type { LocalRegisterInput, RegisterInput } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { DaemonError, RelayError } from '../../errors.js';
import type { AgentSession } from '../../session/session.js';

/**
 * Deregistration revokes the agent's own credentials on the relay before anything is
 * forgotten here, so nobody can write to it any more and its keys are useless. A relay
 * that no longer knows the agent (401/403/404) has nothing left to revoke.
 */
async function revokeSelf(session: AgentSession): Promise<void> {
  try {
    await session.relay.call({ method: 'POST', path: '/api/v1/agents/me/revoke', timeoutMs: 15_000 });
    session.log.info({ agent: session.name }, 'agent revoked on the relay');
  } catch (err) {
    if (err instanceof RelayError && [401, 403, 404].includes(err.relayStatus)) {
      session.log.info({ agent: session.name, code: err.relayErrorCode }, 'relay no longer knows the agent');
      return;
    }
    throw err;
  }
}

const AgentParams = Type.Object({ agent: Type.String({ minLength: 1, maxLength: 128 }) });
const PeerParams = Type.Object({
  agent: Type.String({ minLength: 1, maxLength: 128 }),
  number: Type.String({ minLength: 1, maxLength: 128 }),
});
const RegisterBody = Type.Object({
  enrollment_code: Type.String({ minLength: 1 }),
  deployment: Type.Optional(Type.String({ minLength: 1 })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  display_name: Type.Optional(Type.String()),
  description: Type.Optional(Type.String()),
  discoverable: Type.Optional(Type.Boolean()),
});

const LocalRegisterBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
);

export function agentRoutes(app: FastifyInstance, ctx: DaemonContext): void {
  const agent = (request: { params: unknown }) => ctx.agents.resolve((request.params as { agent: string }).agent);

  app.post('/v1/agents/register', { schema: { body: RegisterBody } }, async (request, reply) => {
    const input = request.body as RegisterInput;
    let deploymentName = input.deployment;
    if (deploymentName === undefined) {
      let deploymentId: string;
      try {
        deploymentId = parseEnrollmentCode(input.enrollment_code).bindings.deployment_id;
      } catch (err) {
        throw new DaemonError('validation_failed', (err as Error).message);
      }
      const found = ctx.deployments.store.byDeploymentId(deploymentId);
      if (!found) {
        throw new DaemonError(
          'unknown_deployment',
          `The code is for deployment ${deploymentId}, which is not trusted here; run \`svc deployment fetch\` first.`,
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
    ctx.localStack.agentAdded(ctx.agents.add(config, answer));
    return reply.status(201).send(localAgent(config));
  });

  app.post('/v1/agents/local', { schema: { body: LocalRegisterBody } }, async (request, reply) => {
    const config = createLocalAgent({
      input: request.body as LocalRegisterInput,
      vault: ctx.vault,
      exists: (n) => ctx.agents.exists(n),
    });
    ctx.agents.add(config);
    return reply.status(201).send(localAgent(config));
  });

  app.get('/v1/agents', async () => ctx.agents.sessions().map((s) => localAgent(s.config)));
  app.get('/v1/agents/:agent', { schema: { params: AgentParams } }, async (request) =>
    localAgent(agent(request).config),
  );
  app.delete('/v1/agents/:agent', { schema: { params: AgentParams } }, async (request) => {
    const session = agent(request);
    // its named source first, while the uplink may still speak for it
    await ctx.localStack.forget(session);
    // revoke=false: forget locally only (a relay that is gone for good); the credentials stay valid there
    // a local agent has no relay to revoke it on
    if ((request.query as { revoke?: string }).revoke !== 'false' && !isLocalOnly(session.config))
      await revokeSelf(session);
    await ctx.agents.remove(session.name);
    return {};
  });
  app.post('/v1/agents/:agent/token', { schema: { params: AgentParams } }, async (request) =>
    agent(request).credentials.accessToken(),
  );
  app.get('/v1/agents/:agent/keys', { schema: { params: AgentParams } }, async (request) => keyStatus(agent(request)));
  app.post('/v1/agents/:agent/keys/generate', { schema: { params: AgentParams } }, async (request) =>
    generateKeys(agent(request)),
  );
  app.post('/v1/agents/:agent/keys/upload-signing', { schema: { params: AgentParams } }, async (request) =>
    uploadSigning(agent(request)),
  );
  app.post('/v1/agents/:agent/peers/:number/accept-key', { schema: { params: PeerParams } }, async (request) =>
    acceptPeerKey(agent(request), (request.params as { number: string }).number),
  );
}
