/**
 * The audit event types a configuration's filters may name: ToolHive's list plus
 * `sse_connection` (which ToolHive emits but refuses in a filter). Shared by the audit schema
 * and the audit middleware; imports nothing, so a runner loads it up front.
 */
export const AUDIT_EVENT_TYPE_NAMES = [
  'mcp_initialize',
  'mcp_tool_call',
  'mcp_tools_list',
  'mcp_resource_read',
  'mcp_resources_list',
  'mcp_prompt_get',
  'mcp_prompts_list',
  'mcp_notification',
  'mcp_ping',
  'mcp_logging',
  'mcp_completion',
  'mcp_roots_list_changed',
  'vmcp_workflow_started',
  'vmcp_workflow_completed',
  'vmcp_workflow_failed',
  'vmcp_workflow_timed_out',
  'vmcp_workflow_step_started',
  'vmcp_workflow_step_completed',
  'vmcp_workflow_step_failed',
  'vmcp_workflow_step_skipped',
  'mcp_request',
  'http_request',
  'sse_connection',
  // Skep extension: a guardrails finding (src/dataplane/middleware/guardrails/events.ts).
  'guardrails_finding',
] as const;
