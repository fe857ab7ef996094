/** Secret references in stage configuration: `<name>,target=<x>` or a bare secret name. */
import { readFile } from 'node:fs/promises';
import type { SecretLookup } from '../../../secrets/index.js';
import { SkepError } from '../../../shared/index.js';

const REFERENCE = /^([^,]+),target=(.+)$/;

/** The secret name of a reference (`<name>,target=<x>` or just `<name>`). */
export function secretName(ref: string): string {
  const m = REFERENCE.exec(ref);
  return m === null ? ref : (m[1] as string);
}

/** The secret's value; `secret_not_found` naming the field when it is missing or empty. */
export async function requireSecret(name: string, lookup: SecretLookup, field: string): Promise<string> {
  const v = await lookup(name);
  if (v === undefined || v === '')
    throw new SkepError('secret_not_found', `${field}: secret "${name}" not found in the secrets provider`);
  return v;
}

/** A `"<name>,target=<x>"` reference is looked up in the secrets provider; anything else is the value. */
export async function secretOrLiteral(value: string, lookup: SecretLookup, field: string): Promise<string> {
  const ref = REFERENCE.exec(value);
  if (ref === null) return value;
  return requireSecret(ref[1] as string, lookup, field);
}

/** `secretOrLiteral` of an optional value (undefined stays undefined). */
export async function optionalSecret(
  value: string | undefined,
  lookup: SecretLookup,
  field: string,
): Promise<string | undefined> {
  return value === undefined ? undefined : secretOrLiteral(value, lookup, field);
}

export async function readTokenFile(path: string, field: string): Promise<string> {
  try {
    const text = (await readFile(path, 'utf8')).trim();
    if (text === '') throw new Error('empty');
    return text;
  } catch (err) {
    throw new SkepError('invalid_config', `${field}: cannot read a token from ${path}`, { cause: err });
  }
}
