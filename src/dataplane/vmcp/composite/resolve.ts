/**
 * Composite tools against the aggregated routing table: which backend tool a step's `tool`
 * names, whether every step resolves, and the annotations a composite is advertised with.
 *
 * A step's tool is found as the reference finds it: the exact advertised (routing) name, then
 * `workload.tool_name` (the backend's own name on that workload). Skep adds one rule: a bare
 * backend tool name that exactly one backend offers (the reference's own example files write
 * `tool: fetch` with prefixing on, which the reference cannot route). Hidden tools (filters,
 * `excludeAll`) stay routable, as there.
 *
 * Annotations (the reference's safety floor): readOnly is the AND of the steps' tools,
 * destructive and openWorld the OR, a tool without annotations counts as not read-only,
 * destructive and open-world (MCP's defaults); explicit annotations are merged over the
 * floor, and a composite whose explicit hint claims to be safer than the floor is dropped
 * from `tools/list`.
 */
import type { Aggregated, Obj, Route } from '../aggregate.js';
import type { CompiledComposite } from './definition.js';

export interface ResolvedRef {
  /** The advertised (routing) name: what authorization and audit see. */
  readonly name: string;
  readonly route: Route;
  readonly tool: Obj | undefined;
}

export type Resolution = { ok: true; ref: ResolvedRef } | { ok: false; reason: string };

/** Tool definitions by advertised name, hidden ones included. */
export function toolIndex(a: Aggregated): Map<string, Obj> {
  const byName = new Map<string, Obj>();
  for (const t of a.allTools) byName.set(String(t['name']), t);
  return byName;
}

export function resolveTool(ref: string, a: Aggregated, index: Map<string, Obj>): Resolution {
  const exact = a.toolRoutes.get(ref);
  if (exact !== undefined) return { ok: true, ref: { name: ref, route: exact, tool: index.get(ref) } };
  const dot = ref.indexOf('.');
  if (dot > 0) {
    const workload = ref.slice(0, dot);
    const original = ref.slice(dot + 1);
    for (const [name, route] of a.toolRoutes)
      if (route.backend === workload && route.original === original)
        return { ok: true, ref: { name, route, tool: index.get(name) } };
  }
  const byOriginal = [...a.toolRoutes].filter(([, r]) => r.original === ref);
  if (byOriginal.length === 1) {
    const [name, route] = byOriginal[0]!;
    return { ok: true, ref: { name, route, tool: index.get(name) } };
  }
  if (byOriginal.length > 1)
    return {
      ok: false,
      reason: `tool "${ref}" is offered by several backends (${byOriginal.map(([, r]) => r.backend).join(', ')}): write "workload.${ref}" or the advertised name`,
    };
  return { ok: false, reason: `tool "${ref}" is not among the backends' tools` };
}

/** The first step whose tool does not resolve, or undefined. */
export function unresolved(c: CompiledComposite, a: Aggregated, index: Map<string, Obj>): string | undefined {
  for (const { step, tool } of c.toolRefs) {
    const r = resolveTool(tool, a, index);
    if (!r.ok) return `${c.where} step "${step}": ${r.reason}`;
  }
  return undefined;
}

interface Hints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * The advertised annotations, or a reason to drop the tool (an explicit hint safer than what
 * the steps allow).
 */
export function compositeAnnotations(
  c: CompiledComposite,
  a: Aggregated,
  index: Map<string, Obj>,
): { ok: true; annotations: Obj } | { ok: false; reason: string } {
  const floor: Hints = {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  };
  for (const { tool } of c.toolRefs) {
    const r = resolveTool(tool, a, index);
    const ann = r.ok ? (r.ref.tool?.['annotations'] as Obj | undefined) : undefined;
    if (ann === undefined) {
      // Unknown: taints the floor.
      floor.readOnlyHint = false;
      floor.destructiveHint = true;
      floor.idempotentHint = false;
      floor.openWorldHint = true;
      continue;
    }
    const readOnly = ann['readOnlyHint'] === true;
    floor.readOnlyHint &&= readOnly;
    // MCP defaults: destructive true and openWorld true when not said; destructive means nothing for a read-only tool.
    floor.destructiveHint ||= !readOnly && ann['destructiveHint'] !== false;
    floor.openWorldHint ||= ann['openWorldHint'] !== false;
    floor.idempotentHint &&= readOnly || ann['idempotentHint'] === true;
  }
  const explicit = c.annotations ?? {};
  if (explicit.readOnlyHint === true && !floor.readOnlyHint)
    return {
      ok: false,
      reason: 'annotations.readOnlyHint is true, but a step calls a tool that is not read-only',
    };
  if (explicit.destructiveHint === false && floor.destructiveHint)
    return {
      ok: false,
      reason: 'annotations.destructiveHint is false, but a step calls a tool that may be destructive',
    };
  if (explicit.openWorldHint === false && floor.openWorldHint)
    return {
      ok: false,
      reason: 'annotations.openWorldHint is false, but a step calls a tool that may reach an open world',
    };
  if (explicit.idempotentHint === true && !floor.idempotentHint)
    return {
      ok: false,
      reason: 'annotations.idempotentHint is true, but a step calls a tool that is not idempotent',
    };
  const merged: Obj = { ...floor };
  for (const [k, v] of Object.entries(explicit)) if (v !== undefined) merged[k] = v;
  return { ok: true, annotations: merged };
}
