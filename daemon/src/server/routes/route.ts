/** Registers an operation of the contract (client/api.ts): its method, path and schemas, typed by them. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  ContextConfigDefault,
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
} from 'fastify';
import type { Operation } from '../../client/api.js';

/** The socket API's app: route schemas type the handlers. */
export type DaemonApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export type OperationHandler<O extends Operation> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  O['schema'],
  TypeBoxTypeProvider,
  FastifyBaseLogger
>;

export function route<O extends Operation>(app: DaemonApp, op: O, handler: OperationHandler<O>): void {
  app.route({ method: op.method, url: op.path, schema: op.schema, handler });
}
