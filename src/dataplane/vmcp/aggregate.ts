/**
 * Aggregation (ToolHive's vMCP conflict resolution and tool filtering), pure: the lists of the
 * backends that are up, and the configuration, give the advertised lists and the routing tables
 * (advertised name → backend and original name). Backends are taken in name order, so every tie is
 * deterministic (⚠ the reference iterates a map). Differences from the reference, on purpose:
 * - `prefixOnlyConflicts: true` renames only names that more than one backend offers;
 * - under `manual`, an unresolved conflict leaves those tools out (with a problem reported)
 *   instead of failing the whole endpoint, since backends come and go at run time;
 * - filters and visibility hide tools from `tools/list` only: hidden tools stay routable.
 */
import type { ResolvedVmcpConfig } from './config.js';

export type Obj = Record<string, unknown>;

export interface BackendLists {
  /** Workload name. */
  readonly name: string;
  readonly tools: readonly Obj[];
  readonly prompts: readonly Obj[];
  readonly resources: readonly Obj[];
  readonly templates: readonly Obj[];
}

export interface Route {
  readonly backend: string;
  /** The name (or URI) the backend knows. */
  readonly original: string;
}

export interface Aggregated {
  readonly tools: Obj[];
  /** Every routable tool under its advertised name, hidden ones (filters, excludeAll) included. */
  readonly allTools: Obj[];
  readonly toolRoutes: Map<string, Route>;
  readonly prompts: Obj[];
  readonly promptRoutes: Map<string, Route>;
  readonly resources: Obj[];
  readonly resourceRoutes: Map<string, Route>;
  readonly templates: Obj[];
  /** Template literal prefix (before the first `{`) → backend, longest first. */
  readonly templateRoutes: Array<{ prefix: string; backend: string }>;
  /** Conflicts that were not resolved, and collisions that dropped names. */
  readonly problems: string[];
}

interface Candidate {
  readonly backend: string;
  readonly original: string;
  /** Name after the per-workload override. */
  readonly base: string;
  readonly item: Obj;
  readonly advertised: boolean;
}

type Aggregation = ResolvedVmcpConfig['aggregation'];

function prefixed(agg: Aggregation, backend: string, name: string): string {
  return agg.prefixFormat.replaceAll('{workload}', backend) + name;
}

/**
 * Resolves names per the strategy. `dropAllOnCollision`: prompts lose every colliding entry
 * (the reference's rule); tools keep the first in backend order.
 */
function resolveNames(
  candidates: readonly Candidate[],
  agg: Aggregation,
  kind: 'tool' | 'prompt',
  problems: string[],
): Map<string, Candidate> {
  const byBase = new Map<string, Candidate[]>();
  for (const c of candidates) {
    const list = byBase.get(c.base);
    if (list === undefined) byBase.set(c.base, [c]);
    else list.push(c);
  }
  const named: Array<[string, Candidate]> = [];
  const strategy =
    kind === 'prompt' && agg.conflictResolution === 'manual' ? 'prefix' : agg.conflictResolution;
  for (const [base, group] of byBase) {
    const conflict = group.length > 1;
    if (strategy === 'prefix') {
      for (const c of group) {
        named.push([conflict || !agg.prefixOnlyConflicts ? prefixed(agg, c.backend, base) : base, c]);
      }
    } else if (strategy === 'priority') {
      const rank = (c: Candidate) => {
        const i = agg.priorityOrder.indexOf(c.backend);
        return i === -1 ? Number.POSITIVE_INFINITY : i;
      };
      if (!conflict) {
        const c = group[0]!;
        // Prompts of unlisted backends stay prefixed (the reference's rule); tools keep bare names.
        named.push([
          kind === 'prompt' && rank(c) === Number.POSITIVE_INFINITY ? prefixed(agg, c.backend, base) : base,
          c,
        ]);
        continue;
      }
      let winner: Candidate | undefined;
      for (const c of group)
        if (rank(c) !== Number.POSITIVE_INFINITY && (winner === undefined || rank(c) < rank(winner)))
          winner = c;
      for (const c of group) {
        if (c === winner) named.push([base, c]);
        else if (rank(c) === Number.POSITIVE_INFINITY) named.push([prefixed(agg, c.backend, base), c]);
        // A listed backend that lost to a higher priority is dropped.
      }
    } else {
      // manual: every conflict must be resolved by an override.
      if (conflict) {
        problems.push(
          `${kind} "${base}" is offered by ${group.map((c) => c.backend).join(', ')}: add an override for all but one (conflictResolution manual)`,
        );
        continue;
      }
      named.push([base, group[0]!]);
    }
  }
  const out = new Map<string, Candidate>();
  const collided = new Set<string>();
  for (const [name, c] of named) {
    if (out.has(name)) {
      problems.push(
        `${kind} "${name}" from ${c.backend} collides with ${out.get(name)!.backend} after renaming`,
      );
      if (kind === 'prompt') collided.add(name);
      continue;
    }
    out.set(name, c);
  }
  for (const name of collided) out.delete(name);
  return out;
}

/** Aggregates the backends' lists (any order; sorted here by workload name). */
export function aggregate(backends: readonly BackendLists[], config: ResolvedVmcpConfig): Aggregated {
  const agg = config.aggregation;
  const sorted = [...backends].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const problems: string[] = [];

  const toolCandidates: Candidate[] = [];
  for (const b of sorted) {
    const entry = agg.tools.get(b.name);
    const visibleBackend =
      !agg.excludeAllTools &&
      entry?.excludeAll !== true &&
      (agg.defaultToolVisibility === 'allow' || entry !== undefined);
    const filter = entry?.filter !== undefined && entry.filter.length > 0 ? new Set(entry.filter) : undefined;
    for (const tool of b.tools) {
      const original = tool['name'];
      if (typeof original !== 'string') continue;
      const override = entry?.overrides?.[original];
      const base = override?.name ?? original;
      let item = tool;
      if (override !== undefined) {
        item = Object.assign({}, tool);
        if (override.description !== undefined) item['description'] = override.description;
        if (override.annotations !== undefined) {
          item['annotations'] = Object.assign(
            {},
            tool['annotations'] as Obj | undefined,
            override.annotations,
          );
        }
      }
      const advertised = visibleBackend && (filter === undefined || filter.has(original) || filter.has(base));
      toolCandidates.push({ backend: b.name, original, base, item, advertised });
    }
  }
  const toolNames = resolveNames(toolCandidates, agg, 'tool', problems);
  const tools: Obj[] = [];
  const allTools: Obj[] = [];
  const toolRoutes = new Map<string, Route>();
  for (const [name, c] of toolNames) {
    toolRoutes.set(name, { backend: c.backend, original: c.original });
    const item = name === c.original ? c.item : Object.assign({}, c.item, { name });
    allTools.push(item);
    if (c.advertised) tools.push(item);
  }

  const promptCandidates: Candidate[] = [];
  for (const b of sorted) {
    for (const prompt of b.prompts) {
      const original = prompt['name'];
      if (typeof original === 'string')
        promptCandidates.push({ backend: b.name, original, base: original, item: prompt, advertised: true });
    }
  }
  const prompts: Obj[] = [];
  const promptRoutes = new Map<string, Route>();
  for (const [name, c] of resolveNames(promptCandidates, agg, 'prompt', problems)) {
    promptRoutes.set(name, { backend: c.backend, original: c.original });
    prompts.push(name === c.original ? c.item : Object.assign({}, c.item, { name }));
  }

  // Resource URIs and templates are never rewritten; the first backend (by name) wins a duplicate.
  const resources: Obj[] = [];
  const resourceRoutes = new Map<string, Route>();
  const templates: Obj[] = [];
  const templateRoutes: Array<{ prefix: string; backend: string }> = [];
  const seenTemplates = new Set<string>();
  for (const b of sorted) {
    for (const r of b.resources) {
      const uri = r['uri'];
      if (typeof uri !== 'string' || resourceRoutes.has(uri)) continue;
      resourceRoutes.set(uri, { backend: b.name, original: uri });
      resources.push(r);
    }
    for (const t of b.templates) {
      const tpl = t['uriTemplate'];
      if (typeof tpl !== 'string' || seenTemplates.has(tpl)) continue;
      seenTemplates.add(tpl);
      templates.push(t);
      const brace = tpl.indexOf('{');
      templateRoutes.push({ prefix: brace === -1 ? tpl : tpl.slice(0, brace), backend: b.name });
    }
  }
  templateRoutes.sort((x, y) => y.prefix.length - x.prefix.length);
  return {
    tools,
    allTools,
    toolRoutes,
    prompts,
    promptRoutes,
    resources,
    resourceRoutes,
    templates,
    templateRoutes,
    problems,
  };
}

/** The backend serving `uri`: a listed resource, else the template with the longest matching literal prefix. */
export function routeResource(a: Aggregated, uri: string): Route | undefined {
  const direct = a.resourceRoutes.get(uri);
  if (direct !== undefined) return direct;
  for (const t of a.templateRoutes)
    if (uri.startsWith(t.prefix)) return { backend: t.backend, original: uri };
  return undefined;
}
