/**
 * Secret references in workload run configurations: `<name>,target=<ENV_VAR>` (the reference
 * implementation's string form; the name cannot hold a comma). Only references are stored;
 * values are resolved when the workload starts and go straight into its environment.
 */
import { SkepError } from '../shared/index.js';
import type { SecretLookup } from './types.js';

export interface SecretReference {
  name: string;
  target: string;
}

const REFERENCE = /^([^,]+),target=(.+)$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function parseSecretReference(text: string): SecretReference {
  const match = REFERENCE.exec(text);
  if (match === null) {
    throw new SkepError(
      'invalid_reference',
      `invalid secret reference '${text}': use '<name>,target=<ENV_VAR>'`,
    );
  }
  const [, name, target] = match as unknown as [string, string, string];
  if (!ENV_NAME.test(target)) {
    throw new SkepError(
      'invalid_reference',
      `invalid secret reference '${text}': target '${target}' is not an environment variable name`,
    );
  }
  return { name, target };
}

export function formatSecretReference(ref: SecretReference): string {
  return `${ref.name},target=${ref.target}`;
}

/**
 * Resolves references to `{ TARGET: value }`. A missing secret is `secret_not_found`
 * naming the secret (never a value); every reference is checked before returning.
 */
export async function resolveSecretReferences(
  references: readonly (string | SecretReference)[],
  lookup: SecretLookup,
): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  const missing: string[] = [];
  for (const entry of references) {
    const ref = typeof entry === 'string' ? parseSecretReference(entry) : entry;
    const value = await lookup(ref.name);
    if (value === undefined) missing.push(ref.name);
    else env[ref.target] = value;
  }
  if (missing.length > 0) {
    throw new SkepError(
      'secret_not_found',
      `secret(s) not found in the secrets provider: ${missing.join(', ')}; create them with 'skep secret set <name>'`,
    );
  }
  return env;
}
