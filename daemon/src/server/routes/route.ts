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
import { DaemonError } from '../../errors.js';

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

/** A query's time (`since`, `after`, `before`): anything Date.parse reads, as ISO-8601; blank is none. */
export function isoTime(v: string | undefined, name: string): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (Number.isNaN(Date.parse(v))) throw new DaemonError('validation_failed', `${name} must be an ISO-8601 time`);
  return new Date(v).toISOString();
}
