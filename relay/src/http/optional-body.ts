/**
 * Routes whose body may be left out (`config: { optionalBody: true }`): a POST with no body,
 * or an empty one, is taken as `{}`, and the generated OpenAPI says the body is optional
 * (@fastify/swagger marks every declared body required).
 */
import type { FastifyRequest } from 'fastify';
import type { TypedApp } from '../routes/types.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    optionalBody?: boolean;
  }
}

type OpenApiDocument = { paths?: Record<string, Record<string, { requestBody?: { required?: boolean } } | undefined>> };

const defaultBody = async (request: FastifyRequest): Promise<void> => {
  if (request.body === undefined || request.body === null) request.body = {};
};

/** Installs the rule; returns the OpenAPI transform that marks those bodies optional. */
export function installOptionalBodies(app: TypedApp): <T>(doc: T) => T {
  const optional: Array<{ method: string; path: string }> = [];
  app.addHook('onRoute', (route) => {
    if (!route.config?.optionalBody) return;
    const own = route.preValidation === undefined ? [] : [route.preValidation].flat();
    route.preValidation = [defaultBody, ...own];
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of [route.method].flat()) optional.push({ method: method.toLowerCase(), path });
  });
  return <T>(doc: T): T => {
    const paths = (doc as OpenApiDocument).paths ?? {};
    for (const { method, path } of optional) {
      const body = paths[path]?.[method]?.requestBody;
      if (body) body.required = false;
    }
    return doc;
  };
}
