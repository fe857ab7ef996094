/**
 * Named schemas in the OpenAPI document. Every TypeBox schema of a route body or response
 * that carries an `$id` or a `title` (`WorkloadSummary`, `RunConfig`, `Error`, …) is emitted
 * once under `components.schemas.<name>` and referenced from the operations (and from other named
 * schemas) by `$ref`, instead of being inlined in every operation that uses it (the error
 * body alone was inlined ~340 times) or listed as `def-N`.
 *
 * Only the document changes: the route schemas that validate requests and serialize
 * responses are not touched (the transform works on copies).
 */

import type { FastifySchema } from 'fastify';
import { ERROR_SCHEMA } from '../../schemas/index.js';
import { ERROR_CODES, isRecord } from '../../shared/index.js';

const COMPONENTS = '#/components/schemas/';

type Json = Record<string, unknown>;

/**
 * The component name of a schema: its `$id`, else its `title`, when that is a valid
 * component key (`^[a-zA-Z0-9._-]+$`). Schemas nested in request bodies are named by
 * `title`: Ajv registers nested `$id`s globally and refuses one used twice.
 */
function componentName(schema: Json): string | undefined {
  const id = schema['$id'] ?? schema['title'];
  return typeof id === 'string' && /^[A-Za-z0-9._-]+$/.test(id) ? id : undefined;
}

export interface SchemaNamer {
  /** The `transform` option of @fastify/swagger: route schemas with named parts as `$ref`s. */
  transform(input: { schema: FastifySchema; url: string }): { schema: FastifySchema; url: string };
  /** The `transformObject` option: adds the named schemas to `components.schemas`. */
  transformObject(input: { openapiObject: Json }): Json;
}

export function createSchemaNamer(): SchemaNamer {
  /** Named schemas found so far, already rewritten (their own named parts are `$ref`s). */
  const named = new Map<string, Json>();
  /** The schema object first seen under each name, to catch two different schemas sharing one. */
  const firstSeen = new Map<string, string>();

  const register = (name: string, schema: Json): void => {
    const text = JSON.stringify(schema);
    const seen = firstSeen.get(name);
    if (seen === undefined) {
      firstSeen.set(name, text);
      named.set(name, rewrite(schema, true));
    } else if (seen !== text) {
      // A programming error: the document would describe one of them wrongly.
      throw new Error(`OpenAPI: two different schemas are named ${name}`);
    }
  };

  /** A copy of `node` with every named sub-schema (and `node` itself unless `keepRoot`) as a `$ref`. */
  function rewrite(node: unknown, keepRoot: boolean): Json {
    return copy(node, keepRoot) as Json;
  }

  function copy(node: unknown, keepRoot: boolean): unknown {
    if (Array.isArray(node)) return node.map((item) => copy(item, false));
    if (!isRecord(node)) return node;
    const name = keepRoot ? undefined : componentName(node);
    if (name !== undefined) {
      register(name, node);
      return { $ref: COMPONENTS + name };
    }
    const out: Json = {};
    for (const key of Object.keys(node)) {
      // Data, not schemas: `enum`, `default`, `examples`, `const` are copied as they are.
      out[key] =
        key === 'enum' || key === 'default' || key === 'examples' || key === 'const'
          ? node[key]
          : key === 'properties' || key === 'patternProperties' || key === '$defs'
            ? mapValues(node[key])
            : copy(node[key], false);
    }
    return out;
  }

  function mapValues(map: unknown): unknown {
    if (!isRecord(map)) return map;
    const out: Json = {};
    for (const key of Object.keys(map)) out[key] = copy(map[key], false);
    return out;
  }

  return {
    transform({ schema, url }) {
      if (!isRecord(schema)) return { schema, url };
      const out: Json = Object.assign({}, schema);
      if (schema['body'] !== undefined) out['body'] = copy(schema['body'], false);
      if (isRecord(schema['response'])) {
        const responses: Json = {};
        for (const [status, response] of Object.entries(schema['response'])) {
          const ref = copy(response, false);
          // A response that is a named schema keeps its own short description (the plugin
          // takes the response's description from here; it drops the sibling from the schema).
          if (isRecord(response) && isRecord(ref) && ref['$ref'] !== undefined) {
            const name = componentName(response) ?? '';
            ref['description'] = responseDescription(name, status, response);
          }
          responses[status] = ref;
        }
        out['response'] = responses;
      }
      return { schema: out, url };
    },
    transformObject({ openapiObject }) {
      const components = (openapiObject['components'] ?? {}) as Json;
      const schemas = (components['schemas'] ?? {}) as Json;
      for (const name of [...named.keys()].sort()) schemas[name] = toOpenApi(named.get(name));
      components['schemas'] = schemas;
      openapiObject['components'] = components;
      return openapiObject;
    },
  };
}

/** The description of a response whose schema is named: errors name the code, others the schema's. */
function responseDescription(name: string, status: string, schema: Json): string {
  if (name === ERROR_SCHEMA) {
    const codes = Object.entries(ERROR_CODES)
      .filter(([, info]) => String(info.status) === status)
      .map(([code]) => `\`${code}\``);
    return codes.length === 0 ? 'Error.' : `Error: ${codes.join(', ')}.`;
  }
  const description = schema['description'];
  return typeof description === 'string' && description !== '' ? firstParagraph(description) : name;
}

const firstParagraph = (text: string): string => text.split(/\n\s*\n/)[0] ?? text;

/**
 * JSON Schema (TypeBox) → OpenAPI 3.1 schema object, as @fastify/swagger converts the inline
 * ones: no `$id`, `const` as a one-value `enum`.
 */
function toOpenApi(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toOpenApi);
  if (!isRecord(node)) return node;
  const out: Json = {};
  for (const key of Object.keys(node)) {
    const value = node[key];
    if (key === '$id' || key === '$schema') continue;
    if (key === 'const') out['enum'] = [value];
    else if (key === 'enum' || key === 'default' || key === 'examples') out[key] = value;
    else if (key === 'patternProperties' && isRecord(value)) {
      // As @fastify/swagger converts inline schemas: a map's value schema (TypeBox `Record`).
      const first = Object.values(value)[0];
      if (first !== undefined) out['additionalProperties'] = toOpenApi(first);
    } else if (key === 'properties') {
      const props: Json = {};
      for (const [name, sub] of Object.entries(value as Json)) props[name] = toOpenApi(sub);
      out[key] = props;
    } else out[key] = toOpenApi(value);
  }
  return out;
}
