/**
 * The audit configuration (`audit_config`, or the JSON file named by `audit_config_path`):
 * camelCase keys, defaults and validation as the reference (ToolHive) has them,
 * parsed once into a frozen object. Differences from the reference, on purpose: `enabled:
 * false` turns audit off (the reference installs the middleware whatever `enabled` says),
 * `sse_connection` may be named in the filters (the reference emits it but refuses the name),
 * unknown keys are refused instead of ignored (a typo such as `excludeEventType` would
 * otherwise silently audit everything), and `logFile` must be absolute (the runner's working
 * directory is nobody's business).
 */
import { readFile } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { jsonSyntaxError, SkepError } from '../shared/index.js';

/** The event types the filters accept: the reference's list plus `sse_connection`. */
export const AUDIT_EVENT_TYPES: ReadonlySet<string> = new Set([
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
]);

/** Defaults, with units (ToolHive's). */
export const AUDIT_DEFAULTS = Object.freeze({
  /** Largest request or response body recorded in `data`, bytes; 0 in the config means this. */
  maxDataSize: 1024,
  /** Most RFC 8693 `act` hops recorded (ToolHive's minting cap). */
  maxDelegationDepth: 10,
  /** `component` when neither the config nor the stage parameters name one. */
  component: 'toolhive-api',
});

export interface AuditConfig {
  /** False only when the config says `enabled: false`; a present `audit_config` means audit is on. */
  readonly enabled: boolean;
  /** `component` of every event; undefined: the stage parameter's, else `toolhive-api`. */
  readonly component: string | undefined;
  /** Allowlist; empty: every type. */
  readonly eventTypes: readonly string[];
  /** Denylist; wins over the allowlist. */
  readonly excludeEventTypes: readonly string[];
  readonly includeRequestData: boolean;
  readonly includeResponseData: boolean;
  /** Outcome `application_error` for JSON-RPC errors and tool results with `isError` (default true). */
  readonly detectApplicationErrors: boolean;
  /** Bytes. */
  readonly maxDataSize: number;
  readonly maxDelegationDepth: number;
  /** Absolute path of the append-only audit file; undefined: the runner's log. */
  readonly logFile: string | undefined;
}

const KEYS = new Set([
  'enabled',
  'component',
  'eventTypes',
  'excludeEventTypes',
  'includeRequestData',
  'includeResponseData',
  'detectApplicationErrors',
  'maxDataSize',
  'maxDelegationDepth',
  'logFile',
]);

function bad(message: string): never {
  throw new SkepError('bad_request', message);
}

function boolean(raw: Record<string, unknown>, key: string, field: string, fallback: boolean): boolean {
  const value = raw[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') bad(`${field}.${key} must be true or false`);
  return value;
}

function integer(raw: Record<string, unknown>, key: string, field: string): number | undefined {
  const value = raw[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) bad(`${field}.${key} must be an integer`);
  return value;
}

function string(raw: Record<string, unknown>, key: string, field: string): string | undefined {
  const value = raw[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') bad(`${field}.${key} must be a string`);
  return value === '' ? undefined : value;
}

function eventTypes(raw: Record<string, unknown>, key: string, field: string): readonly string[] {
  const value = raw[key];
  if (value === undefined || value === null) return Object.freeze([]);
  if (!Array.isArray(value)) bad(`${field}.${key} must be a list of event types`);
  for (const name of value) {
    if (typeof name !== 'string' || !AUDIT_EVENT_TYPES.has(name))
      bad(
        `${field}.${key}: unknown event type ${JSON.stringify(name)}; known types: ${[...AUDIT_EVENT_TYPES].join(', ')}`,
      );
  }
  return Object.freeze([...(value as string[])]);
}

/**
 * Validates an audit configuration (the `audit_config` object, or a config file's content)
 * and applies the defaults. `field` names it in errors (`audit_config`, or the file).
 */
export function parseAuditConfig(value: unknown, field = 'audit_config'): AuditConfig {
  if (value === null || value === undefined) value = {};
  if (typeof value !== 'object' || Array.isArray(value)) bad(`${field} must be a JSON object`);
  const raw = value as Record<string, unknown>;
  const unknown = Object.keys(raw).filter((k) => !KEYS.has(k));
  if (unknown.length > 0)
    bad(
      `${field}: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}; ` +
        `known keys (camelCase): ${[...KEYS].join(', ')}`,
    );
  const maxDataSize = integer(raw, 'maxDataSize', field) ?? 0;
  if (maxDataSize < 0)
    bad(`${field}.maxDataSize must not be negative (bytes; 0 means ${AUDIT_DEFAULTS.maxDataSize})`);
  const maxDelegationDepth = integer(raw, 'maxDelegationDepth', field) ?? AUDIT_DEFAULTS.maxDelegationDepth;
  if (maxDelegationDepth <= 0) bad(`${field}.maxDelegationDepth must be a positive integer`);
  const logFile = string(raw, 'logFile', field);
  if (logFile !== undefined && !isAbsolute(logFile))
    bad(`${field}.logFile must be an absolute path (got ${JSON.stringify(logFile)})`);
  return Object.freeze({
    enabled: boolean(raw, 'enabled', field, true),
    component: string(raw, 'component', field),
    eventTypes: eventTypes(raw, 'eventTypes', field),
    excludeEventTypes: eventTypes(raw, 'excludeEventTypes', field),
    includeRequestData: boolean(raw, 'includeRequestData', field, false),
    includeResponseData: boolean(raw, 'includeResponseData', field, false),
    detectApplicationErrors: boolean(raw, 'detectApplicationErrors', field, true),
    maxDataSize: maxDataSize === 0 ? AUDIT_DEFAULTS.maxDataSize : maxDataSize,
    maxDelegationDepth,
    logFile,
  });
}

/**
 * Reads and validates the file of `audit_config_path`. JSON only, like the reference (which
 * decodes it with a JSON decoder): a YAML file is refused with a message that says so.
 */
export async function loadAuditConfigFile(path: string, field = 'audit_config_path'): Promise<AuditConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    bad(`${field}: cannot read the audit configuration file ${path} (${code})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    bad(
      `${field}: the audit configuration file ${path} is not valid JSON (${jsonSyntaxError(text, err)}); ` +
        'the file must be JSON (YAML is not supported)',
    );
  }
  return parseAuditConfig(value, `${field} (${path})`);
}

/** Whether events of `type` are written (the denylist wins; an empty allowlist allows all). */
export function auditsEventType(config: AuditConfig, type: string): boolean {
  if (config.excludeEventTypes.includes(type)) return false;
  return config.eventTypes.length === 0 || config.eventTypes.includes(type);
}
