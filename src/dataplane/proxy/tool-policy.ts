/**
 * `tools_filter` and `tools_override` (ToolHive's run-configuration fields) applied to `tools/list`
 * results and `tools/call` requests. Overrides are keyed by the server's original tool name; a
 * renamed tool is listed and called only under its new name. The filter matches either name.
 * An override's `annotations` (MCP 2025-11-25 `ToolAnnotations`) are set over the tool's own,
 * field by field, as the reference's MCPToolConfig overrides them: unset fields pass through.
 */
import type { ToolAnnotations, ToolOverride } from './types.js';

export interface ToolPolicy {
  /** True when the policy changes nothing (the hot path skips it). */
  readonly passthrough: boolean;
  /** Rewrites a `tools/list` result in place (filters, renames, re-describes). */
  applyToList(result: unknown): void;
  /** Maps a client-visible tool name to the server's name; undefined when it is not callable. */
  resolveCall(name: string): string | undefined;
}

export function createToolPolicy(
  filter: readonly string[] | undefined,
  overrides: Record<string, ToolOverride> | undefined,
): ToolPolicy {
  const allowed = filter !== undefined && filter.length > 0 ? new Set(filter) : undefined;
  const byOriginal = new Map<string, ToolOverride>();
  const toOriginal = new Map<string, string>();
  for (const [original, override] of Object.entries(overrides ?? {})) {
    if (!changesSomething(override)) continue;
    byOriginal.set(original, override);
    if (override.name !== undefined && override.name !== original) {
      if (toOriginal.has(override.name))
        throw new Error(`tools override: two tools are renamed to '${override.name}'`);
      toOriginal.set(override.name, original);
    }
  }
  const exposedName = (original: string): string => byOriginal.get(original)?.name ?? original;
  const permitted = (original: string): boolean =>
    allowed === undefined || allowed.has(original) || allowed.has(exposedName(original));

  return {
    passthrough: allowed === undefined && byOriginal.size === 0,
    applyToList(result) {
      if (result === null || typeof result !== 'object') return;
      const holder = result as { tools?: unknown };
      if (!Array.isArray(holder.tools)) return;
      const out: unknown[] = [];
      for (const tool of holder.tools as Array<Record<string, unknown>>) {
        if (tool === null || typeof tool !== 'object' || typeof tool['name'] !== 'string') continue;
        const original = tool['name'];
        if (!permitted(original)) continue;
        const override = byOriginal.get(original);
        if (override !== undefined) {
          if (override.name !== undefined) tool['name'] = override.name;
          if (override.description !== undefined) tool['description'] = override.description;
          if (override.annotations !== undefined) tool['annotations'] = annotated(tool, override.annotations);
        }
        out.push(tool);
      }
      holder.tools = out;
    },
    resolveCall(name) {
      const renamedFrom = toOriginal.get(name);
      const original = renamedFrom ?? name;
      // The old name of a renamed tool is hidden.
      if (renamedFrom === undefined && exposedName(name) !== name) return undefined;
      return permitted(original) ? original : undefined;
    },
  };
}

function changesSomething(override: ToolOverride): boolean {
  return (
    override.name !== undefined ||
    override.description !== undefined ||
    (override.annotations !== undefined && Object.keys(override.annotations).length > 0)
  );
}

/**
 * The tool's annotations with the override's set over them. A server's `annotations` that is not
 * an object (it must be one) is replaced, so the listed tool stays valid for clients.
 */
function annotated(tool: Record<string, unknown>, override: ToolAnnotations): Record<string, unknown> {
  const own = tool['annotations'];
  const merged: Record<string, unknown> = {};
  if (own !== null && typeof own === 'object' && !Array.isArray(own)) Object.assign(merged, own);
  return Object.assign(merged, override);
}
