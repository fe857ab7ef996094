/**
 * Reads a stored or imported run configuration (its schema is `RunConfigSchema` in
 * `src/schemas/run-config.ts`): fills the fields the reference omits and validates.
 */
import {
  type ProxyMode,
  type RunConfig,
  RUN_CONFIG_SCHEMA_VERSION,
  RunConfigSchema,
  type Transport,
} from '../schemas/index.js';
import {
  type GeneratedValidator,
  validateAuditConfig,
  validateGuardrailsConfig,
  validateRateLimitConfig,
  validateTelemetryConfig,
  validationProblem,
} from '../schemas/validators/index.js';
import { endpointPrefixProblem } from '../dataplane/proxy/index.js';
import { SkepError } from '../shared/index.js';
import { createValidator } from '../validation/index.js';

export type { ProxyMode, RunConfig, Transport };

const validator = createValidator(RunConfigSchema);

/**
 * Middleware configurations the run configuration embeds, each with the generated validator of
 * its schema (the one `RunConfigSchema` embeds), which the runner checks it with.
 */
const MIDDLEWARE_FIELDS: ReadonlyArray<readonly [field: keyof RunConfig, validate: GeneratedValidator]> = [
  ['rate_limit_config', validateRateLimitConfig],
  ['audit_config', validateAuditConfig],
  ['guardrails_config', validateGuardrailsConfig],
  ['telemetry_config', validateTelemetryConfig],
];

/**
 * A middleware configuration's mistake is refused as the runner would word it — `invalid_config`
 * with the field's path and its schema's message (`rate_limit_config.tools[0].name is required
 * (the tool's name)`) — not as a generic schema error of the whole document.
 */
function checkMiddlewareFields(raw: Readonly<Record<string, unknown>>, what: string): void {
  for (const [field, validate] of MIDDLEWARE_FIELDS) {
    if (raw[field] === undefined) continue;
    const problem = validationProblem(validate, raw[field], field);
    if (problem !== undefined) throw new SkepError('invalid_config', `invalid ${what}: ${problem}`);
  }
}

/** `endpoint_prefix` must be a path the proxy can put in its SSE `endpoint` event. */
function checkEndpointPrefix(raw: Readonly<Record<string, unknown>>, what: string): void {
  const prefix = raw['endpoint_prefix'];
  if (typeof prefix !== 'string') return;
  const problem = endpointPrefixProblem(prefix);
  if (problem !== undefined)
    throw new SkepError('invalid_config', `invalid ${what}: endpoint_prefix ${problem}`);
}

/**
 * Fills the fields a stored or imported run configuration may omit (the reference omits
 * empty maps and lists) and validates the result. Throws `invalid_config` for a middleware
 * configuration (`checkMiddlewareFields`) or an endpoint prefix, else `bad_request`, naming the
 * fields.
 */
export function parseRunConfig(value: unknown, what = 'run configuration'): RunConfig {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return validator.parse(value, what);
  }
  const raw = { ...(value as Record<string, unknown>) };
  raw['schema_version'] ??= RUN_CONFIG_SCHEMA_VERSION;
  raw['cmd_args'] ??= [];
  raw['env_vars'] ??= {};
  raw['secrets'] ??= [];
  raw['volumes'] ??= [];
  raw['container_labels'] ??= {};
  raw['permission_profile'] ??= {};
  // An empty host would make node listen on every interface; the default is loopback.
  if (raw['host'] === undefined || raw['host'] === '') raw['host'] = '127.0.0.1';
  raw['group'] ??= 'default';
  raw['transport'] ??= 'stdio';
  raw['port'] ??= 0;
  // A remote server has no image to run.
  if (typeof raw['remote_url'] === 'string') raw['image'] ??= '';
  // Nor does a virtual MCP server.
  if (typeof raw['vmcp'] === 'object' && raw['vmcp'] !== null) raw['image'] ??= '';
  checkMiddlewareFields(raw, what);
  checkEndpointPrefix(raw, what);
  return validator.parse(raw, what);
}
