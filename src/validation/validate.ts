/**
 * One validator for every TypeBox schema outside the HTTP layer (config files, stored
 * documents, registry sources, CRDs). Errors name the offending field as a JSON path.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Static, TSchema } from 'typebox';
import { type ErrorCode, SkepError } from '../shared/index.js';
import { formatAjvError } from '../schemas/validators/index.js';

// ajv-formats is CommonJS; its default export is the plugin function.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

// `validateSchema: false`: the schemas are TypeBox's, checked by the type system and by the tests
// that use them; checking each against the JSON Schema meta-schema first meant compiling that
// meta-schema in every process, about half of the config file's validation at `skep serve`
// start-up.
// Made on the first compile: modules that declare validators are loaded by processes (`skep
// serve` at start, a CLI command) that may never check anything with them.
let shared: Ajv | undefined;
const ajv = (): Ajv =>
  (shared ??= addFormats(
    new Ajv({ allErrors: true, strict: false, useDefaults: true, coerceTypes: false, validateSchema: false }),
  ));

export interface Validator<S extends TSchema> {
  /** Returns the value typed, or throws a `SkepError` (the validator's code) naming every bad field. */
  parse(value: unknown, what?: string): Static<S>;
  /** Returns human-readable problems, empty when the value is valid. */
  problems(value: unknown): string[];
}

/**
 * `code` is what `parse` throws: `bad_request` for a request body or value (the default), or a
 * narrower kind the caller can branch on (`invalid_config` for a configuration file, ...).
 */
export function createValidator<S extends TSchema>(
  schema: S,
  options: { code?: ErrorCode } = {},
): Validator<S> {
  const code = options.code ?? 'bad_request';
  // Compiled on first use: modules declare their validators at load time, and most
  // processes (a workload runner, a CLI command) use only a few of them.
  let compiled: ValidateFunction | undefined;
  const problems = (value: unknown): string[] => {
    compiled ??= ajv().compile(schema);
    const check = compiled;
    if (check(value)) return [];
    return (check.errors ?? []).map(formatAjvError);
  };
  return {
    problems,
    parse(value: unknown, what = 'value'): Static<S> {
      const found = problems(value);
      if (found.length > 0) throw new SkepError(code, `invalid ${what}: ${found.join('; ')}`);
      return value as Static<S>;
    },
  };
}
