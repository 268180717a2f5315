import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AddDeploymentInput, FetchDeploymentInput, RenewDeploymentInput } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { deploymentInfo } from '../../deployments/store.js';

const NameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 128 }) });
const FetchBody = Type.Object({
  url: Type.String({ minLength: 1 }),
  trust_bundle: Type.String({ minLength: 1 }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  ca_bundle: Type.Optional(Type.String()),
});
const AddBody = Type.Object({
  document: Type.String({ minLength: 1 }),
  trust_bundle: Type.String({ minLength: 1 }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  ca_bundle: Type.Optional(Type.String()),
});
const RenewBody = Type.Object({
  url: Type.Optional(Type.String()),
  document: Type.Optional(Type.String()),
  trust_bundle: Type.Optional(Type.String()),
  ca_bundle: Type.Optional(Type.String()),
});

export function deploymentRoutes(app: FastifyInstance, ctx: DaemonContext): void {
  const d = ctx.deployments;
  app.get('/v1/deployments', async () => d.list());
  app.post('/v1/deployments/fetch', { schema: { body: FetchBody } }, async (request) =>
    d.fetch(request.body as FetchDeploymentInput),
  );
  app.post('/v1/deployments/add', { schema: { body: AddBody } }, async (request) =>
    d.add(request.body as AddDeploymentInput),
  );
  app.get('/v1/deployments-audit', async () => d.audit());
  app.get('/v1/deployments/:name', { schema: { params: NameParams } }, async (request) =>
    deploymentInfo(d.get((request.params as { name: string }).name)),
  );
  app.delete('/v1/deployments/:name', { schema: { params: NameParams } }, async (request) => {
    d.remove((request.params as { name: string }).name);
    return {};
  });
  app.post('/v1/deployments/:name/renew', { schema: { params: NameParams, body: RenewBody } }, async (request) =>
    d.renew((request.params as { name: string }).name, (request.body ?? {}) as RenewDeploymentInput),
  );
}
