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
import { SkepError } from '../../../shared/index.js';
import { type Aggregated, aggregate, type BackendLists, type Obj, type Route } from '../aggregate.js';
import type { ResolvedVmcpConfig } from '../config.js';
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

/** A workload that would be a backend, and the tool names its runner reported (undefined: not known yet). */
export interface KnownBackend {
  readonly name: string;
  readonly tools: readonly string[] | undefined;
}

/**
 * The create/update-time check of the steps' tools (ToolHive refuses a composite naming an
 * unknown tool when it loads the config, against the routing table). Here the routing table
 * exists only while the backends run, so the check uses what their runners last reported:
 * - every backend's tools known: the aggregation is built from those names, and a step that
 *   would not resolve at start is refused now, with the same reason;
 * - some not known yet (stopped, starting, or admitting no tool listing): only a step written
 *   `workload.tool_name` whose workload's tools are known is checked, and only when no other
 *   spelling (an exact advertised name of the known backends, an override's new name) could
 *   match it; the rest is left to the start-time check.
 * Static `backends[]` are not workloads: nothing is known of them before start.
 * Throws `invalid_config` naming the composite and the step.
 */
export function checkCompositeRefs(
  config: ResolvedVmcpConfig,
  group: string,
  backends: readonly KnownBackend[],
): void {
  if (config.composites.length === 0 || config.staticBackends !== undefined) return;
  const known = backends.filter(
    (b): b is KnownBackend & { tools: readonly string[] } => b.tools !== undefined,
  );
  const lists: BackendLists[] = known.map((b) => ({
    name: b.name,
    tools: b.tools.map((name) => ({ name })),
    prompts: [],
    resources: [],
    templates: [],
  }));
  const a = aggregate(lists, config);
  const index = toolIndex(a);
  const complete = known.length === backends.length;
  const renamed = new Set<string>();
  for (const entry of config.aggregation.tools.values())
    for (const o of Object.values(entry.overrides ?? {})) if (o.name !== undefined) renamed.add(o.name);
  const members = new Set(backends.map((b) => b.name));
  for (const c of config.composites) {
    for (const { step, tool } of c.toolRefs) {
      const r = resolveTool(tool, a, index);
      if (r.ok) continue;
      const dot = tool.indexOf('.');
      const workload = dot > 0 ? tool.slice(0, dot) : undefined;
      const outside =
        workload !== undefined && !members.has(workload)
          ? ` (no workload "${workload}" in group "${group}")`
          : '';
      if (complete)
        throw new SkepError('invalid_config', `${c.where} step "${step}": ${r.reason}${outside}`, {
          details: { composite: c.name, step, tool },
        });
      const backend = known.find((b) => b.name === workload);
      if (backend === undefined || renamed.has(tool)) continue;
      throw new SkepError(
        'invalid_config',
        `${c.where} step "${step}": workload "${backend.name}" offers no tool "${tool.slice(dot + 1)}" (it offers: ${backend.tools.join(', ') || 'none'})`,
        { details: { composite: c.name, step, tool } },
      );
    }
  }
}
