/**
 * Generates the CustomResourceDefinitions of the skep.dev kinds from their TypeBox
 * definition. TypeBox emits plain JSON Schema; Kubernetes wants a *structural* schema
 * (apiextensions.k8s.io/v1): `type` on every node, no `$id`, no `const`/`anyOf` unions, no
 * `additionalProperties` next to `properties`, and string maps as `additionalProperties`.
 */
import { EXTAUTH_GROUP, EXTAUTH_VERSION, MCP_EXTERNAL_AUTH_CONFIG } from '../../schemas/extauth/index.js';
import type { KindDefinition } from '../../schemas/workloads/index.js';
import { OPERATOR_KINDS } from '../../schemas/operator/index.js';

type Node = Record<string, unknown>;

const DROP = new Set([
  '$id',
  '$schema',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  'patternProperties',
  'title',
]);

function inferType(values: unknown[]): string {
  const first = values[0];
  if (typeof first === 'boolean') return 'boolean';
  if (typeof first === 'number') return Number.isInteger(first) ? 'integer' : 'number';
  return 'string';
}

/** Rewrites one JSON Schema node (and its children) into Kubernetes' structural form. */
export function toStructural(input: unknown): Node {
  const node = JSON.parse(JSON.stringify(input)) as Node;
  const out: Node = {};
  // Literal unions (`anyOf` of `const`) become an enum.
  const anyOf = node['anyOf'] as Node[] | undefined;
  // A union of different types (e.g. a duration as integer or string) cannot be structural:
  // Kubernetes keeps such a value as written, and the validator checks it.
  if (anyOf !== undefined && !anyOf.every((s) => 'const' in s)) {
    const keep: Node = { 'x-kubernetes-preserve-unknown-fields': true };
    if (typeof node['description'] === 'string') keep['description'] = node['description'];
    return keep;
  }
  if (anyOf !== undefined) node['enum'] = anyOf.map((s) => s['const']);
  if ('const' in node) node['enum'] = [node['const']];
  for (const [key, value] of Object.entries(node)) {
    if (DROP.has(key)) continue;
    if (key === 'properties') {
      out[key] = Object.fromEntries(Object.entries(value as Node).map(([k, v]) => [k, toStructural(v)]));
    } else if (key === 'items') {
      out[key] = toStructural(value);
    } else if (key === 'additionalProperties') {
      // `false` is implied by pruning and is illegal next to `properties`.
      if (typeof value === 'object') out[key] = toStructural(value);
    } else {
      out[key] = value;
    }
  }
  const pattern = node['patternProperties'] as Node | undefined;
  if (pattern !== undefined) {
    const [only] = Object.values(pattern);
    out['additionalProperties'] = toStructural(only);
  }
  if (out['type'] === undefined && Array.isArray(out['enum']))
    out['type'] = inferType(out['enum'] as unknown[]);
  // An untyped node (any JSON value) is kept as written.
  if (out['type'] === undefined) out['x-kubernetes-preserve-unknown-fields'] = true;
  return out;
}

export const CRD_NAME = `${MCP_EXTERNAL_AUTH_CONFIG.plural}.${EXTAUTH_GROUP}`;

/** The MCPExternalAuthConfig CRD object, ready to be serialized to YAML. */
export function buildCrd(): Node {
  return buildKindCrd(MCP_EXTERNAL_AUTH_CONFIG);
}

/** The CRD of one kind, from its TypeBox definition. */
export function buildKindCrd(def: KindDefinition): Node {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${def.plural}.${EXTAUTH_GROUP}`,
      labels: { 'app.kubernetes.io/name': 'skep', 'app.kubernetes.io/part-of': 'skep' },
    },
    spec: {
      group: EXTAUTH_GROUP,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: [...def.shortNames],
        categories: ['skep'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: EXTAUTH_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: def.description,
              ...(def.specRequired ? { required: ['spec'] } : {}),
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: toStructural(def.spec),
                status: toStructural(def.status),
              },
            },
          },
        },
      ],
    },
  };
}

/** Every CRD Skep serves: MCPExternalAuthConfig and the other kinds. */
export function buildAllCrds(): Node[] {
  return [buildCrd(), ...OPERATOR_KINDS.map(buildKindCrd)];
}
