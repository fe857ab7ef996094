/**
 * Evaluates the `x-kubernetes-validations` CEL rules of an OpenAPI schema against an object,
 * the way the Kubernetes API server does after structural validation: each rule runs with
 * `self` bound to the value at the node that carries it, and only where that value exists.
 * Works on the TypeBox definition and on the generated CRD YAML alike, so the validator and
 * the tests exercise the very rules the cluster enforces.
 */
import { parse } from '@marcbachmann/cel-js';
import { toCelValue } from '../../validation/index.js';
import { isRecord } from '../../shared/index.js';
import { listAt, recordAt } from './json-fields.js';

// Re-exported for the operator's callers and tests; the helper itself lives in src/validation/cel.ts.
export { toCelValue };

type Compiled = ReturnType<typeof parse>;
/** An OpenAPI schema (a TypeBox schema or a CRD's), read field by field. */
type SchemaNode = unknown;

export interface RuleViolation {
  /** Field path, e.g. `spec.awsSts.roleMappings[0]`. */
  path: string;
  message: string;
  rule: string;
}

const compiled = new Map<string, Compiled>();

function compile(rule: string): Compiled {
  let fn = compiled.get(rule);
  if (fn === undefined) {
    fn = parse(rule);
    compiled.set(rule, fn);
  }
  return fn;
}

interface RawRule {
  rule: string;
  message?: string;
  fieldPath?: string;
}

/** The `x-kubernetes-validations` of a schema node (entries without a rule are not rules). */
function rulesOf(schema: SchemaNode): RawRule[] {
  const out: RawRule[] = [];
  for (const r of listAt(schema, 'x-kubernetes-validations')) {
    if (!isRecord(r) || typeof r['rule'] !== 'string') continue;
    const rule: RawRule = { rule: r['rule'] };
    if (typeof r['message'] === 'string') rule.message = r['message'];
    if (typeof r['fieldPath'] === 'string') rule.fieldPath = r['fieldPath'];
    out.push(rule);
  }
  return out;
}

/** Walks schema and value together and returns every failing rule. */
export function evaluateCelRules(schema: SchemaNode, value: unknown, path = ''): RuleViolation[] {
  const out: RuleViolation[] = [];
  walk(schema, value, path, out);
  return out;
}

function walk(schema: SchemaNode, value: unknown, path: string, out: RuleViolation[]): void {
  if (value === undefined) return;
  const ruleList = rulesOf(schema);
  if (ruleList.length > 0) {
    const self = toCelValue(value);
    for (const r of ruleList) {
      let ok: unknown;
      try {
        ok = compile(r.rule)({ self });
      } catch {
        // A structurally invalid value (wrong type) makes the rule unevaluable; the structural
        // validator has already reported that, and the API server would not run the rule either.
        continue;
      }
      if (ok !== true) {
        out.push({
          path: path + (r.fieldPath ?? ''),
          message: r.message ?? `failed rule: ${r.rule}`,
          rule: r.rule,
        });
      }
    }
  }
  if (isRecord(value)) {
    for (const [key, sub] of Object.entries(recordAt(schema, 'properties')))
      walk(sub, value[key], path === '' ? key : `${path}.${key}`, out);
  }
  const extra = recordAt(schema)['additionalProperties'];
  if (isRecord(extra) && isRecord(value)) {
    for (const [key, v] of Object.entries(value)) walk(extra, v, `${path}.${key}`, out);
  }
  const items = recordAt(schema)['items'];
  if (items !== undefined && Array.isArray(value)) {
    for (const [i, v] of value.entries()) walk(items, v, `${path}[${i}]`, out);
  }
}

/** Every rule declared anywhere in a schema, with the schema path that carries it. */
export function collectCelRules(schema: SchemaNode, path = ''): Array<RawRule & { at: string }> {
  const out: Array<RawRule & { at: string }> = [];
  const visit = (node: SchemaNode, at: string) => {
    for (const r of rulesOf(node)) out.push({ ...r, at });
    for (const [k, sub] of Object.entries(recordAt(node, 'properties')))
      visit(sub, at === '' ? k : `${at}.${k}`);
    const { additionalProperties, items } = recordAt(node);
    if (isRecord(additionalProperties)) visit(additionalProperties, `${at}.*`);
    if (isRecord(items)) visit(items, `${at}[]`);
  };
  visit(schema, path);
  return out;
}
