/** The OpenAPI schema namer: named parts of route schemas become components and `$ref`s. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifySchema } from 'fastify';
import { Type } from 'typebox';
import { createSchemaNamer } from '../../../src/control/api/openapi.js';
import { ErrorBody } from '../../../src/schemas/index.js';

const Item = Type.Object(
  { id: Type.String(), tags: Type.Record(Type.String(), Type.String()) },
  { title: 'Item' },
);
const Page = Type.Object({ items: Type.Array(Item), first: Type.Optional(Item) }, { $id: 'Page' });

test('named schemas (by $id or title) are emitted once and referenced; the route schema is not changed', () => {
  const namer = createSchemaNamer();
  const schema = { body: Item, response: { 200: Page, 404: ErrorBody } } as FastifySchema;
  const before = JSON.stringify(schema);
  const { schema: out } = namer.transform({ schema, url: '/x' });
  assert.equal(JSON.stringify(schema), before, 'the schema that validates and serializes is untouched');
  const doc = out as { body: unknown; response: Record<string, Record<string, unknown>> };
  assert.deepEqual(doc.body, { $ref: '#/components/schemas/Item' });
  assert.equal(doc.response['200']?.['$ref'], '#/components/schemas/Page');
  assert.equal(doc.response['404']?.['$ref'], '#/components/schemas/Error');
  // An error response says which codes it stands for, instead of repeating the code table.
  assert.match(String(doc.response['404']?.['description']), /^Error: `not_found`, .*`workload_not_found`/);

  const object = namer.transformObject({ openapiObject: { components: { securitySchemes: {} } } });
  const schemas = (object['components'] as { schemas: Record<string, Record<string, unknown>> }).schemas;
  assert.deepEqual(Object.keys(schemas), ['Error', 'Item', 'Page']);
  assert.deepEqual(schemas['Page']?.['properties'], {
    items: { type: 'array', items: { $ref: '#/components/schemas/Item' } },
    first: { $ref: '#/components/schemas/Item' },
  });
  // No `$id` in the document; a TypeBox record is a map (`additionalProperties`).
  assert.equal(schemas['Page']?.['$id'], undefined);
  assert.deepEqual((schemas['Item']?.['properties'] as Record<string, unknown>)['tags'], {
    type: 'object',
    additionalProperties: { type: 'string' },
  });
  assert.match(String(schemas['Error']?.['description']), /\| `bad_request` \| 400 \|/);
});

test('two different schemas under one name are refused (the document would describe one wrongly)', () => {
  const namer = createSchemaNamer();
  const other = Type.Object({ id: Type.Integer() }, { title: 'Item' });
  namer.transform({ schema: { body: Item }, url: '/a' });
  assert.throws(
    () => namer.transform({ schema: { body: other }, url: '/b' }),
    /two different schemas are named Item/,
  );
});
