/**
 * Optional fields without `undefined` values. With `exactOptionalPropertyTypes` an optional
 * property may be absent but not `undefined`, and several wire shapes (JSON bodies, YAML/TOML
 * files, run configurations) must not carry a key without a value; this replaces the
 * hand-written `...(x === undefined ? {} : { k: x })` spread, one per field.
 */

type UndefinedKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T];

/** `T` with every field that may be `undefined` turned into an optional field without it. */
export type DefinedOnly<T> = { [K in Exclude<keyof T, UndefinedKeys<T>>]: T[K] } & {
  [K in UndefinedKeys<T>]?: Exclude<T[K], undefined>;
};

/** A copy of `fields` without the keys whose value is `undefined`; key order is kept. */
export function definedOnly<T extends object>(fields: T): DefinedOnly<T> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
  return out as DefinedOnly<T>;
}
