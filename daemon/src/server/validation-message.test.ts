import { Type } from '@sinclair/typebox';
import { validationMessage } from '@svc/shared';
import Fastify from 'fastify';
import { expect, it } from 'vitest';

/** A Fastify app with the daemon's formatter and a route with a body, a query and a path schema. */
async function app() {
  const a = Fastify({ schemaErrorFormatter: (errors, dataVar) => new Error(validationMessage(errors, dataVar)) });
  a.setErrorHandler((err: Error, _req, reply) => reply.status(400).send({ message: err.message }));
  a.post(
    '/v1/agents/:name/send',
    {
      schema: {
        params: Type.Object({ name: Type.String({ pattern: '^[a-z]+$' }) }),
        querystring: Type.Object({ limit: Type.Optional(Type.String({ pattern: '^[0-9]+$' })) }),
        body: Type.Object(
          {
            to: Type.String({ minLength: 1 }),
            content: Type.String(),
            tags: Type.Optional(Type.Array(Type.Object({ key: Type.String() }, { additionalProperties: false }))),
          },
          { additionalProperties: false },
        ),
      },
    },
    async () => ({ ok: true }),
  );
  await a.ready();
  return a;
}

it('names the field and where it is, in words, for each kind of refusal', async () => {
  const a = await app();
  const said = async (url: string, payload: unknown) =>
    (await a.inject({ method: 'POST', url, payload: payload as object })).json<{ message: string }>().message;
  expect(await said('/v1/agents/ann/send', { content: 'x' })).toBe('the body lacks to, which is required');
  expect(await said('/v1/agents/ann/send', { to: '', content: 'x' })).toBe(
    'to in the body must not have fewer than 1 characters',
  );
  expect(await said('/v1/agents/ann/send', { to: { a: 1 }, content: 'x' })).toBe('to in the body must be string');
  expect(await said('/v1/agents/ann/send', { to: 'b', content: 'x', tags: [{ key: [] }] })).toBe(
    'tags[0].key in the body must be string',
  );
  expect(await said('/v1/agents/ann/send?limit=abc', { to: 'b', content: 'x' })).toBe(
    'limit in the query must match pattern "^[0-9]+$"',
  );
  expect(await said('/v1/agents/ANN/send', { to: 'b', content: 'x' })).toBe(
    'name in the path must match pattern "^[a-z]+$"',
  );
  await a.close();
});
