/**
 * The `environment` provider: read-only secrets from `SKEP_SECRET_<NAME>` variables.
 * A name is looked up as written first, then normalised (upper case, anything outside
 * `A-Z0-9_` as `_`), so `github-token` is found in `SKEP_SECRET_GITHUB_TOKEN`. An empty
 * value counts as missing. Listing is refused on purpose: it would enumerate the process
 * environment.
 */
import { SkepError } from '../shared/index.js';
import { ReadOnlyProvider } from './read-only-provider.js';
import type { ProviderCapabilities, SecretKeyInfo } from './types.js';

export const ENV_SECRET_PREFIX = 'SKEP_SECRET_';

export const ENVIRONMENT_CAPABILITIES: ProviderCapabilities = Object.freeze({
  can_read: true,
  can_write: false,
  can_delete: false,
  can_list: false,
  can_cleanup: false,
});

export function environmentVariableFor(name: string): string {
  return ENV_SECRET_PREFIX + name.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
}

export class EnvironmentProvider extends ReadOnlyProvider {
  readonly type = 'environment' as const;
  readonly capabilities = ENVIRONMENT_CAPABILITIES;

  async get(name: string): Promise<string | undefined> {
    for (const variable of [ENV_SECRET_PREFIX + name, environmentVariableFor(name)]) {
      const value = this.env[variable];
      if (value !== undefined && value !== '') return value;
    }
    return undefined;
  }

  async list(): Promise<SecretKeyInfo[]> {
    throw this.refusal('list secrets');
  }

  protected refusal(what: string): SkepError {
    return new SkepError(
      'secrets_read_only',
      `the environment secrets provider cannot ${what}: set ${ENV_SECRET_PREFIX}<NAME> variables instead, or switch to the encrypted provider`,
    );
  }
}
