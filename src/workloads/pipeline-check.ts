/**
 * What create, update and import check about a run configuration's pipeline before it is
 * stored: the plan (`planPipeline`: known types, no conflicting fields), the run-configuration
 * blocks a `middleware_configs` entry carries (validated against the same schema as the typed
 * fields, so both ways accept exactly the same values) and each stage's own `check`. Imported
 * by the API side only: it loads the schemas, which a workload runner must not.
 */
import { type RunConfig, RunConfigSchema } from '../schemas/index.js';
import { createValidator } from '../validation/index.js';
import { SkepError } from '../shared/index.js';
import { FACTORIES, planPipeline } from '../dataplane/pipeline/index.js';

/** Per stage type: parameter key → the run-configuration field it carries. */
const BLOCKS: Readonly<Record<string, Readonly<Record<string, keyof RunConfig>>>> = {
  auth: { oidc_config: 'oidc_config' },
  upstreamswap: { config: 'upstream_swap_config' },
  tokenexchange: { token_exchange_config: 'token_exchange_config' },
  awssts: { aws_sts_config: 'aws_sts_config' },
  'remote-auth': { remote_auth_config: 'remote_auth_config' },
};

/**
 * Stage types that only set headers of the requests to an HTTP server: a stdio server receives
 * none, so they are refused for one, as their typed fields are (`workloads/unsupported-fields.ts`).
 */
const HTTP_ONLY: ReadonlySet<string> = new Set(['header-forward', 'tokenexchange', 'upstreamswap']);

function checkBlock(type: string, key: string, field: keyof RunConfig, value: unknown): void {
  const schema = (RunConfigSchema.properties as Record<string, unknown>)[field];
  const problems = createValidator(schema as never).problems(value);
  if (problems.length > 0)
    throw new SkepError(
      'invalid_config',
      `middleware_configs: '${type}' parameter '${key}': ${problems.join('; ')}`,
    );
}

export async function checkPipeline(config: RunConfig): Promise<void> {
  const explicit = (config.middleware_configs ?? []).length > 0;
  for (const entry of planPipeline(config)) {
    if (explicit) {
      if (HTTP_ONLY.has(entry.type) && config.transport === 'stdio' && !config.remote_url)
        throw new SkepError(
          'invalid_config',
          `middleware_configs: '${entry.type}' sets headers of requests to an HTTP server (a remote url, or transport sse/streamable-http), and a stdio server receives none; remove it`,
        );
      const params = entry.parameters;
      if (params !== null && typeof params === 'object' && !Array.isArray(params))
        for (const [key, field] of Object.entries(BLOCKS[entry.type] ?? {})) {
          const value = (params as Record<string, unknown>)[key];
          if (value !== undefined && value !== null) checkBlock(entry.type, key, field, value);
        }
    }
    await FACTORIES.get(entry.type)?.check?.(entry.parameters, config);
  }
}
