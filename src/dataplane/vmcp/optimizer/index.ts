/**
 * The vMCP optimizer: `find_tool` / `call_tool` over the aggregated tools (ToolHive's MCP Optimizer).
 * Used by the virtual MCP endpoint (`src/dataplane/vmcp/`); pure (no HTTP, no sessions).
 */
export type { EmbeddingSettings, OptimizerConfig, OptimizerSettings } from './config.js';
export { OPTIMIZER_DEFAULTS, resolveOptimizerSettings } from './config.js';
export type { OptimizerOptions } from './optimizer.js';
export { CALL_TOOL_NAME, createOptimizer, FIND_TOOL_NAME } from './optimizer.js';
export type {
  FindToolOutput,
  McpTool,
  Optimizer,
  OptimizerCallResult,
  ResolvedCall,
  TokenMetrics,
  ToolScope,
} from './types.js';
