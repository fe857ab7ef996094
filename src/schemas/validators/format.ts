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
  /** Set when a property name failed (`propertyNames`). */
  readonly propertyName?: string;
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

function fill(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}

/**
 * `field` and a message: `x.y is required`; `x.y: unknown key z` or `x.y.z is not a field` when
 * the message starts with a colon or a dot.
 */
function join(field: string, message: string): string {
  return message.startsWith(':') || message.startsWith('.') ? `${field}${message}` : `${field} ${message}`;
}

const UNKNOWN_KEYS = ': unknown key{s} {keys} (known: {known})';

/**
 * The message for `error`, the value at `root` being the one validated. Placeholders in an
 * `x-errors` message: `{value}` (the value as written), `{json}` (as JSON), `{name}` (a property name that
 * failed `propertyNames`); for unknown keys
 * `{keys}`, `{keysJson}`, `{keysQuoted}`, `{s}` (plural) and `{known}`. A schema with `x-error-at: "list"`
 * (a list's item) reports at the list's path.
 */
export function formatValidatorError(root: string, error: ValidatorError): string {
  const parent = error.parentSchema ?? {};
  let field = fieldPath(root, error.instancePath);
  if (parent['x-error-at'] === 'list') field = field.replace(/\[\d+\]$/, '');
  const properties = (parent['properties'] ?? {}) as Record<string, unknown>;
  const messages = messagesOf(parent);
  if (error.keyword === 'required') {
    const missing = String(error.params['missingProperty']);
    return join(`${field}.${missing}`, messagesOf(properties[missing])['required'] ?? 'is required');
  }
  if (error.keyword === 'additionalProperties') {
    const known = Object.keys(properties);
    const data = (error.data ?? {}) as Record<string, unknown>;
    const unknown = Object.keys(data).filter((key) => !known.includes(key));
    return join(
      field,
      fill(messages['additionalProperties'] ?? UNKNOWN_KEYS, {
        s: unknown.length > 1 ? 's' : '',
        keys: unknown.join(', '),
        keysJson: unknown.map((key) => JSON.stringify(key)).join(', '),
        keysQuoted: unknown.map((key) => `'${key}'`).join(', '),
        known: known.join(', '),
      }),
    );
  }
  const template = messages[error.keyword];
  if (template !== undefined)
    return join(
      field,
      fill(template, {
        value: String(error.data),
        json: JSON.stringify(error.data),
        name: error.propertyName ?? '',
      }),
    );
  if (error.keyword === 'type') {
    const type = error.params['type'];
    if (type === 'object') return `${field} must be an object`;
    if (type === 'array') return `${field} must be a list`;
  }
  return `${field} ${error.message ?? 'is invalid'}`;
}

/**
 * One problem of a schema check as `path.to.field: what is wrong` (the form of every
 * validator made by `createValidator`, and of the embedded auth server's generated one).
 */
export function formatAjvError(error: ValidatorError): string {
  const base = error.instancePath === '' ? '' : error.instancePath.slice(1).replaceAll('/', '.');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return `${base === '' ? '' : `${base}.`}${missing}: is required`;
  }
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return `${base === '' ? '' : `${base}.`}${extra}: is not a known field`;
  }
  if (error.keyword === 'enum') {
    const allowed = (error.params as { allowedValues: unknown[] }).allowedValues;
    return `${base || '(root)'}: must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return `${base || '(root)'}: ${error.message ?? 'is invalid'}`;
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
