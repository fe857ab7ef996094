/**
 * Secret references of a workload, on top of the secrets domain: a run configuration stores
 * `"<name>,target=<ENV_VAR>"` only; values are looked up through a `SecretLookup` when a
 * server starts and are never stored, exported or logged.
 */
import {
  formatSecretReference,
  parseSecretReference,
  resolveSecretReferences,
  type SecretLookup,
  type SecretReference,
  validateSecretName,
} from '../secrets/index.js';

export type { SecretLookup, SecretReference };
export { formatSecretReference, parseSecretReference, resolveSecretReferences };

/** Validates a `{name, target}` pair from a request (name rule of the secrets domain, env-name target). */
export function validateSecretRef(ref: SecretReference): void {
  validateSecretName(ref.name);
  parseSecretReference(formatSecretReference(ref));
}

/** Throws `secret_not_found` (or `secrets_not_setup`) unless every referenced secret resolves. */
export async function requireSecrets(refs: readonly SecretReference[], lookup: SecretLookup): Promise<void> {
  if (refs.length === 0) return;
  await resolveSecretReferences(refs, lookup);
}
