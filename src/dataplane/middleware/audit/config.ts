/**
 * The audit configuration (`audit_config`, or the JSON file named by `audit_config_path`):
 * camelCase keys, defaults and validation as the reference (ToolHive) has them,
 * parsed once into a frozen object. Differences from the reference, on purpose: `enabled:
 * false` turns audit off (the reference installs the middleware whatever `enabled` says),
 * `sse_connection` may be named in the filters (the reference emits it but refuses the name),
 * unknown keys are refused instead of ignored, and `logFile` must be absolute. The shape is
 * `AuditConfigSchema` (src/schemas/audit.ts), checked by its generated validator.
 */
import { readFile } from 'node:fs/promises';
import {
  AUDIT_EVENT_TYPE_NAMES,
  validateAuditConfig,
  validationProblem,
} from '../../../schemas/validators/index.js';
import { isRecord, jsonSyntaxError, SkepError } from '../../../shared/index.js';

/** The event types the filters accept: the reference's list plus `sse_connection`. */
export const AUDIT_EVENT_TYPES: ReadonlySet<string> = new Set(AUDIT_EVENT_TYPE_NAMES);

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

/** What the schema lets through. */
interface RawAuditConfig {
  readonly enabled?: boolean;
  readonly component?: string;
  readonly eventTypes?: readonly string[];
  readonly excludeEventTypes?: readonly string[];
  readonly includeRequestData?: boolean;
  readonly includeResponseData?: boolean;
  readonly detectApplicationErrors?: boolean;
  readonly maxDataSize?: number;
  readonly maxDelegationDepth?: number;
  readonly logFile?: string;
}

function bad(message: string): never {
  throw new SkepError('invalid_config', message);
}

/** ToolHive's JSON writes an absent list as null. */
function withoutNullLists(raw: Record<string, unknown>): Record<string, unknown> {
  const out = { ...raw };
  for (const key of ['eventTypes', 'excludeEventTypes']) if (out[key] === null) delete out[key];
  return out;
}

/**
 * Validates an audit configuration (the `audit_config` object, or a config file's content)
 * against `AuditConfigSchema` and applies the defaults. `field` names it in errors
 * (`audit_config`, or the file).
 */
export function parseAuditConfig(value: unknown, field = 'audit_config'): AuditConfig {
  const input =
    value === null || value === undefined ? {} : isRecord(value) ? withoutNullLists(value) : value;
  const problem = validationProblem(validateAuditConfig, input, field);
  if (problem !== undefined) bad(problem);
  const raw = input as RawAuditConfig;
  const maxDataSize = raw.maxDataSize ?? 0;
  return Object.freeze({
    enabled: raw.enabled ?? true,
    component: raw.component === '' ? undefined : raw.component,
    eventTypes: Object.freeze([...(raw.eventTypes ?? [])]),
    excludeEventTypes: Object.freeze([...(raw.excludeEventTypes ?? [])]),
    includeRequestData: raw.includeRequestData ?? false,
    includeResponseData: raw.includeResponseData ?? false,
    detectApplicationErrors: raw.detectApplicationErrors ?? true,
    maxDataSize: maxDataSize === 0 ? AUDIT_DEFAULTS.maxDataSize : maxDataSize,
    maxDelegationDepth: raw.maxDelegationDepth ?? AUDIT_DEFAULTS.maxDelegationDepth,
    logFile: raw.logFile === '' ? undefined : raw.logFile,
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
