/**
 * Turns the first error of a generated validator (Ajv standalone code, compiled with `verbose`)
 * into the "<field path> <what is wrong>" message the configuration parsers have always
 * given: `rate_limit_config.tools[0].name is required (the tool's name)`. A schema states a
 * keyword's message in `x-errors`; the rest have one wording per keyword.
 */

/** What a generated validator reports (the subset of Ajv's `ErrorObject` read here). */
export interface ValidatorError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly message?: string;
  readonly parentSchema?: Readonly<Record<string, unknown>>;
  readonly data?: unknown;
}

/** A generated validator: true when `value` fits, else false with `errors` set. */
export interface GeneratedValidator {
  (value: unknown): boolean;
  errors?: readonly ValidatorError[] | null;
}

type Messages = Readonly<Record<string, string>>;

function messagesOf(schema: unknown): Messages {
  if (typeof schema !== 'object' || schema === null) return {};
  const messages = (schema as Record<string, unknown>)['x-errors'];
  return typeof messages === 'object' && messages !== null ? (messages as Messages) : {};
}

/** `/tools/0/perUser` under `rate_limit_config` → `rate_limit_config.tools[0].perUser`. */
function fieldPath(root: string, instancePath: string): string {
  let path = root;
  for (const token of instancePath.split('/').slice(1)) {
    const name = token.replaceAll('~1', '/').replaceAll('~0', '~');
    path += /^\d+$/.test(name) ? `[${name}]` : `.${name}`;
  }
  return path;
}

function fill(template: string, value: unknown): string {
  return template.replaceAll('{value}', String(value)).replaceAll('{json}', JSON.stringify(value));
}

/** The message for `error`, the value at `root` being the one validated. */
export function formatValidatorError(root: string, error: ValidatorError): string {
  const field = fieldPath(root, error.instancePath);
  const parent = error.parentSchema ?? {};
  const properties = (parent['properties'] ?? {}) as Record<string, unknown>;
  if (error.keyword === 'required') {
    const missing = String(error.params['missingProperty']);
    const template = messagesOf(properties[missing])['required'] ?? 'is required';
    return `${field}.${missing} ${fill(template, undefined)}`;
  }
  if (error.keyword === 'additionalProperties') {
    const known = Object.keys(properties);
    const data = (error.data ?? {}) as Record<string, unknown>;
    const unknown = Object.keys(data).filter((key) => !known.includes(key));
    const s = unknown.length > 1 ? 's' : '';
    return `${field}: unknown key${s} ${unknown.join(', ')} (known: ${known.join(', ')})`;
  }
  const template = messagesOf(parent)[error.keyword];
  if (template !== undefined) return `${field} ${fill(template, error.data)}`;
  if (error.keyword === 'type') {
    const type = error.params['type'];
    if (type === 'object') return `${field} must be an object`;
    if (type === 'array') return `${field} must be a list`;
  }
  return `${field} ${error.message ?? 'is invalid'}`;
}

/**
 * Why `value` does not fit `validate`'s schema, as one message naming the field, or undefined
 * when it fits.
 */
export function validationProblem(
  validate: GeneratedValidator,
  value: unknown,
  root: string,
): string | undefined {
  if (validate(value)) return undefined;
  const first = validate.errors?.[0];
  return first === undefined ? `${root} is invalid` : formatValidatorError(root, first);
}
