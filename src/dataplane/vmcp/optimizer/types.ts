/**
 * The optimizer's contract with the virtual MCP endpoint (ToolHive's `find_tool` / `call_tool`).
 * With the optimizer on, `tools/list` shows only `find_tool` and `call_tool`; the endpoint
 * indexes the aggregated tool list with `index()`, answers a `find_tool` call with `find()`
 * and turns a `call_tool` call into the inner tool call with `resolveCall()` (authorization
 * then applies to the inner tool name, as for a direct call). This module speaks MCP shapes
 * only: no HTTP, no sessions, no backends.
 */

/** An MCP tool definition (MCP 2025-11-25 `Tool`), kept opaque beyond the fields the search reads. */
export interface McpTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: { type?: string; properties?: Record<string, unknown>; required?: string[] } & Record<
    string,
    unknown
  >;
  [key: string]: unknown;
}

/** A `tools/call` result (MCP 2025-11-25 `CallToolResult`) as the optimizer produces it. */
export interface OptimizerCallResult {
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** `token_metrics` of a `find_tool` answer: estimated tokens (JSON bytes ÷ 4, per tool, rounded down). */
export interface TokenMetrics {
  /** Tokens of every tool definition the session may see (what `tools/list` would cost without the optimizer). */
  baseline_tokens: number;
  /** Tokens of the definitions returned by this search. */
  returned_tokens: number;
  /** (baseline − returned) / baseline × 100; 0 when there are no tools. */
  savings_percent: number;
}

/** The `structuredContent` of a successful `find_tool` answer (also serialised as its text content). */
export interface FindToolOutput {
  /** Full definitions of the matching tools, best first, at most `maxToolsToReturn`. */
  tools: McpTool[];
  token_metrics: TokenMetrics;
}

/**
 * Restricts one call to the tools a session may see (e.g. after Cedar filtered `tools/list`).
 * Tools it rejects are neither returned, counted in `baseline_tokens`, nor callable. Pass the
 * same object for every call of a session: the session's baseline is computed once per
 * scope object and tool list (it asks `allows` about every tool), searches ask it only about
 * their best candidates.
 */
export interface ToolScope {
  allows(name: string): boolean;
}

/** What `resolveCall` gives: the inner call to make, or the tool error to answer with. */
export type ResolvedCall =
  { ok: true; name: string; arguments: Record<string, unknown> } | { ok: false; result: OptimizerCallResult };

export interface Optimizer {
  /**
   * Replaces the indexed tool list (call it whenever the aggregated list changes). The BM25
   * index is rebuilt before this returns (tools whose definition did not change are not
   * re-analysed); the promise settles when the embeddings of new or changed tools are
   * computed or have failed (it never rejects). Callers may ignore the promise.
   */
  index(tools: readonly McpTool[]): Promise<void>;
  /** The two tool definitions `tools/list` shows: `find_tool` and `call_tool`. */
  tools(): readonly McpTool[];
  /**
   * Answers a `find_tool` call. Bad arguments give a tool error (`isError: true`) naming the
   * field (MCP 2025-11-25: input validation errors are tool execution errors); never rejects.
   */
  find(args: unknown, scope?: ToolScope): Promise<OptimizerCallResult>;
  /**
   * Checks a `call_tool` call's arguments and names the inner call. A `tool_name` nested in
   * `parameters` is hoisted out (as the reference does). Unknown or out-of-scope tools give
   * the tool error `tool not found: <name>`.
   */
  resolveCall(args: unknown, scope?: ToolScope): ResolvedCall;
  /** Stops background embedding work; idempotent. */
  close(): void;
}
