/**
 * A request the relay's or the daemon's schemas refuse, said in one line a person reads:
 * which field, where (`to` in the body, `limit` in the query), and what is wrong. Fastify's
 * own wording named the schema's places instead (`body/to must NOT have fewer than 1
 * characters`, `querystring must have required property 'to'`). For Fastify's
 * schemaErrorFormatter; the shapes are ajv's, stated here so that shared needs no Fastify.
 */

/** One of ajv's errors (Fastify's FastifySchemaValidationError). */
export interface SchemaValidationError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
}

/** Where Fastify found the value (its schemaErrorFormatter's dataVar). */
export type SchemaErrorDataVar = 'body' | 'headers' | 'params' | 'querystring';

const PLACES: Record<SchemaErrorDataVar, string> = {
  body: 'the body',
  querystring: 'the query',
  params: 'the path',
  headers: 'the headers',
};

/** `/a/0/b` → `a[0].b` */
function fieldOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part), '');
}

export function validationMessage(errors: readonly SchemaValidationError[], dataVar: SchemaErrorDataVar): string {
  const first = errors[0];
  const place = PLACES[dataVar] ?? dataVar;
  if (!first) return `${place} is not valid`;
  const field = fieldOf(first.instancePath);
  const within = field ? `${field} in ${place}` : place;
  const { missingProperty, additionalProperty } = first.params as {
    missingProperty?: string;
    additionalProperty?: string;
  };
  if (first.keyword === 'required' && missingProperty) return `${within} lacks ${missingProperty}, which is required`;
  // (the relay refuses fields its schemas do not name; the daemon's Fastify drops them)
  if (first.keyword === 'additionalProperties' && additionalProperty) {
    return `${within} has ${additionalProperty}, which is not a field it takes`;
  }
  // ajv's own words for the rest: "must be string", "must NOT have fewer than 1 characters"
  return `${within} ${(first.message ?? 'is not valid').replace(/^must NOT/, 'must not')}`;
}
