/**
 * The official Cedar engine (`@cedar-policy/cedar-wasm`), loaded on first use: compiling its
 * 4 MB WebAssembly module takes ~30 ms, which a `skep serve` process or a workload runner
 * without an `authz_config` never pays. Here: policy and entity compilation (with errors that
 * name the policy and carry Cedar's own text), the preparsed policy sets, and the entity JSON
 * format of the reference (`uid` as `{type, id}` or `{"__entity": {type, id}}`).
 */
import { setFlagsFromString } from 'node:v8';
import type * as CedarWasm from '@cedar-policy/cedar-wasm/nodejs';
import { isRecord, jsonSyntaxError, lazyRequire, SkepError } from '../../../shared/index.js';

export type CedarValue = CedarWasm.CedarValueJson;
export type CedarEntity = CedarWasm.EntityJson & { uid: CedarWasm.TypeAndId; parents: CedarWasm.TypeAndId[] };
export type CedarAnswer = CedarWasm.AuthorizationAnswer;

const requireCedar = lazyRequire<typeof CedarWasm>('@cedar-policy/cedar-wasm/nodejs');
let flagged = false;

/**
 * The engine. Node 20's V8 (11.3) crashes the process ("Fatal error … unreachable code" in
 * `Deoptimizer::DoComputeBuiltinContinuation`) when optimized code that inlined a JS→Wasm
 * call is deoptimized lazily during that call — reproducibly within a few thousand Cedar
 * decisions. Turning that inlining off before any caller is optimized avoids it; the cost is
 * one ordinary call per decision.
 */
export function loadCedar(): typeof CedarWasm {
  if (!flagged) {
    flagged = true;
    setFlagsFromString('--no-turbo-inline-js-wasm-calls');
  }
  return requireCedar();
}

function bad(message: string): SkepError {
  return new SkepError('invalid_config', message);
}

/** Cedar's error text, with its source label and help when it gives them. */
export function describeCedarError(error: CedarWasm.DetailedError): string {
  const label = error.sourceLocations?.find((l) => l.label !== null)?.label;
  return [
    error.message,
    label === undefined || label === null ? '' : `: ${label}`,
    error.help ? ` (${error.help})` : '',
  ]
    .join('')
    .trim();
}

/** The reference's policy ids: `policy0` … `policy<N>` in the order given. */
function policyRecord(policies: readonly string[]): Record<string, string> {
  const record: Record<string, string> = {};
  policies.forEach((text, i) => {
    record[`policy${i}`] = text;
  });
  return record;
}

/** Parses each policy on its own so an error names exactly one (`field[i] (policy<i>)`). */
export function compilePolicies(policies: readonly string[], field: string): void {
  const cedar = loadCedar();
  policies.forEach((text, i) => {
    const answer = cedar.checkParsePolicySet({ staticPolicies: { [`policy${i}`]: text } });
    if (answer.type === 'failure')
      throw bad(`${field}[${i}] (policy${i}): ${answer.errors.map(describeCedarError).join('; ')}`);
  });
}

let nextSetId = 0;

/** Preparses the policies once (wasm thread-local cache); the id is what per-request calls name. */
export function preparsePolicies(policies: readonly string[], field: string): string {
  const id = `skep-authz-${++nextSetId}`;
  const answer = loadCedar().preparsePolicySet(id, { staticPolicies: policyRecord(policies) });
  if (answer.type === 'failure') throw bad(`${field}: ${answer.errors.map(describeCedarError).join('; ')}`);
  return id;
}

/** Which attribute names the policies can read, and whether one uses `context` as a whole value. */
export interface AttributeUse {
  readonly names: ReadonlySet<string>;
  readonly wholeContext: boolean;
}

/**
 * Cedar reads attributes only by literal name (`x.attr`, `x["attr"]`, `x has attr`), so the
 * names any policy can read are known from the policy text. Handing Cedar only those keeps
 * each decision cheap (crossing into WebAssembly and building entities costs per attribute)
 * without changing any decision: an attribute no policy names cannot influence one. The one
 * exception, `context` compared or used as a whole record, is detected and then the context
 * is passed whole.
 */
export function attributeUse(policies: readonly string[]): AttributeUse {
  const cedar = loadCedar();
  const names = new Set<string>();
  let wholeContext = false;
  const isContextVar = (node: unknown) => isRecord(node) && node['Var'] === 'context';
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    if (!isRecord(node)) return;
    if (node['Var'] === 'context') wholeContext = true;
    for (const [key, value] of Object.entries(node)) {
      if ((key === '.' || key === 'has') && isRecord(value)) {
        const attr = value['attr'];
        for (const a of Array.isArray(attr) ? attr : [attr]) if (typeof a === 'string') names.add(a);
        // `context.x` / `context has x` read one key; anything else touching `context` is whole.
        if (!isContextVar(value['left'])) walk(value['left']);
        continue;
      }
      walk(value);
    }
  };
  for (const text of policies) {
    const answer = cedar.policyToJson(text);
    if (answer.type === 'failure') return { names, wholeContext: true };
    walk(answer.json.conditions);
  }
  return { names, wholeContext };
}

/** `{type, id}` or `{"__entity": {type, id}}` → `{type, id}`; anything else (a bare string) is refused. */
function entityUid(value: unknown, field: string): CedarWasm.TypeAndId {
  const inner = isRecord(value) && isRecord(value['__entity']) ? value['__entity'] : value;
  if (!isRecord(inner) || typeof inner['type'] !== 'string' || typeof inner['id'] !== 'string')
    throw bad(
      `${field} must be an entity reference {"type": "...", "id": "..."} (or {"__entity": {...}}), not ${JSON.stringify(value)}`,
    );
  return { type: inner['type'], id: inner['id'] };
}

export function entityKey(uid: CedarWasm.TypeAndId): string {
  return `${uid.type}\u0000${uid.id}`;
}

/**
 * `entities_json` (a JSON string holding an array of entities, '' for none) → normalised
 * entities, checked by Cedar. Duplicate uids are refused (which one would win is not obvious).
 */
export function compileEntities(json: string, field: string): CedarEntity[] {
  if (json.trim() === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    // V8's message quotes the text, which may come from an authorizer file.
    throw bad(`${field} is not valid JSON (${jsonSyntaxError(json, err)})`);
  }
  if (!Array.isArray(parsed)) throw bad(`${field} must hold a JSON array of entities`);
  const seen = new Set<string>();
  const entities = parsed.map((entry: unknown, i): CedarEntity => {
    const at = `${field}[${i}]`;
    if (!isRecord(entry)) throw bad(`${at} must be an object with uid, attrs and parents`);
    const unknown = Object.keys(entry).filter((k) => !['uid', 'attrs', 'parents', 'tags'].includes(k));
    if (unknown.length > 0) throw bad(`${at}: unknown keys ${unknown.map((k) => `'${k}'`).join(', ')}`);
    const uid = entityUid(entry['uid'], `${at}.uid`);
    const key = entityKey(uid);
    if (seen.has(key)) throw bad(`${at}: ${uid.type}::${JSON.stringify(uid.id)} is defined twice`);
    seen.add(key);
    const attrs = entry['attrs'] ?? {};
    if (!isRecord(attrs)) throw bad(`${at}.attrs must be an object`);
    const parents = entry['parents'] ?? [];
    if (!Array.isArray(parents)) throw bad(`${at}.parents must be an array`);
    const entity: CedarEntity = {
      uid,
      attrs: attrs as Record<string, CedarValue>,
      parents: parents.map((p: unknown, j) => entityUid(p, `${at}.parents[${j}]`)),
    };
    if (entry['tags'] !== undefined) {
      if (!isRecord(entry['tags'])) throw bad(`${at}.tags must be an object`);
      entity.tags = entry['tags'] as Record<string, CedarValue>;
    }
    return entity;
  });
  const answer = loadCedar().checkParseEntities({ entities });
  if (answer.type === 'failure') throw bad(`${field}: ${answer.errors.map(describeCedarError).join('; ')}`);
  return entities;
}
