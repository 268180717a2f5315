import { Type } from '@sinclair/typebox';
import { parseEnrollmentCode } from '@svc/shared';
import type { FastifyInstance } from 'fastify';
import { acceptPeerKey, generateKeys, keyStatus, uploadSigning } from '../../agents/keys.js';
import { register } from '../../agents/register.js';
import { localAgent } from '../../agents/store.js';
import type { RegisterInput } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { DaemonError } from '../../errors.js';

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
    ctx.agents.add(config, answer);
    return reply.status(201).send(localAgent(config));
  });

  app.get('/v1/agents', async () => ctx.agents.sessions().map((s) => localAgent(s.config)));
  app.get('/v1/agents/:agent', { schema: { params: AgentParams } }, async (request) =>
    localAgent(agent(request).config),
  );
  app.delete('/v1/agents/:agent', { schema: { params: AgentParams } }, async (request) => {
    await ctx.agents.remove((request.params as { agent: string }).agent);
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
