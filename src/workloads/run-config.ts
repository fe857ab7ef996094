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
import { createValidator } from '../validation/index.js';

export type { ProxyMode, RunConfig, Transport };

const validator = createValidator(RunConfigSchema);

/**
 * Fills the fields a stored or imported run configuration may omit (the reference omits
 * empty maps and lists) and validates the result. Throws `bad_request` naming the fields.
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
  return validator.parse(raw, what);
}
