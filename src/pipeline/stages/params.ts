/**
 * Reading a stage's `middleware_configs` parameters. Where a parameter carries a block of the
 * run configuration (`oidc_config`, `token_exchange_config`, ...), it is validated against
 * that block's schema, so both ways of configuring a stage accept exactly the same values.
 */
import { createValidator, type Validator } from '../../schemas/index.js';
import { SkepError } from '../../shared/index.js';
import { type RunConfig, RunConfigSchema } from '../../workloads/run-config.js';

/** The parameters as an object (`{}` when absent); `bad_request` naming the stage otherwise. */
export function paramsObject(type: string, parameters: unknown): Record<string, unknown> {
  if (parameters === undefined || parameters === null) return {};
  if (typeof parameters !== 'object' || Array.isArray(parameters))
    throw new SkepError('bad_request', `middleware_configs: the parameters of '${type}' must be an object`);
  return parameters as Record<string, unknown>;
}

const validators = new Map<string, Validator<never>>();

/**
 * `params[key]`, validated as the run-configuration field `field` (default: `key`);
 * undefined when absent.
 */
export function runConfigBlock<F extends keyof RunConfig>(
  type: string,
  params: Record<string, unknown>,
  key: string,
  field: F,
): RunConfig[F] | undefined {
  const value = params[key];
  if (value === undefined || value === null) return undefined;
  let validator = validators.get(field);
  if (validator === undefined) {
    const schema = (RunConfigSchema.properties as Record<string, unknown>)[field];
    validator = createValidator(schema as never);
    validators.set(field, validator);
  }
  const problems = validator.problems(value);
  if (problems.length > 0)
    throw new SkepError(
      'bad_request',
      `middleware_configs: '${type}' parameter '${key}': ${problems.join('; ')}`,
    );
  return value as RunConfig[F];
}

/** A string parameter, or undefined. */
export function stringParam(type: string, params: Record<string, unknown>, key: string): string | undefined {
  const v = params[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string')
    throw new SkepError('bad_request', `middleware_configs: '${type}' parameter '${key}' must be a string`);
  return v;
}
