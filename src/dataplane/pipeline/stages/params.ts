/** Reading a stage's `middleware_configs` parameters. */
import { SkepError } from '../../../shared/index.js';
import type { RunConfig } from '../../../schemas/index.js';

/** The parameters as an object (`{}` when absent); `invalid_config` naming the stage otherwise. */
export function paramsObject(type: string, parameters: unknown): Record<string, unknown> {
  if (parameters === undefined || parameters === null) return {};
  if (typeof parameters !== 'object' || Array.isArray(parameters))
    throw new SkepError(
      'invalid_config',
      `middleware_configs: the parameters of '${type}' must be an object`,
    );
  return parameters as Record<string, unknown>;
}

/**
 * `params[key]` as the run-configuration block `field` (undefined when absent). Blocks from
 * typed fields were validated with the run configuration; blocks in `middleware_configs` are
 * validated against the same schema at create, update and import (`../check.ts`), so the
 * runner, which must not load the schemas, only checks the shape here.
 */
export function runConfigBlock<F extends keyof RunConfig>(
  type: string,
  params: Record<string, unknown>,
  key: string,
  _field: F,
): RunConfig[F] | undefined {
  const value = params[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new SkepError(
      'invalid_config',
      `middleware_configs: '${type}' parameter '${key}' must be an object`,
    );
  return value as RunConfig[F];
}

/** A string parameter, or undefined. */
export function stringParam(type: string, params: Record<string, unknown>, key: string): string | undefined {
  const v = params[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string')
    throw new SkepError(
      'invalid_config',
      `middleware_configs: '${type}' parameter '${key}' must be a string`,
    );
  return v;
}
