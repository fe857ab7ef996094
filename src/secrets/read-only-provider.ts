/**
 * What the read-only providers (environment, 1Password) have in common: every write is
 * refused with `secrets_read_only`, in the provider's own words saying where to manage the
 * secret instead, and there is nothing to close. Both read the process environment they are
 * given (`env`).
 */
import type { SkepError } from '../shared/index.js';
import type { ProviderCapabilities, ProviderType, SecretKeyInfo, SecretProvider } from './types.js';

export abstract class ReadOnlyProvider implements SecretProvider {
  abstract readonly type: ProviderType;
  abstract readonly capabilities: ProviderCapabilities;
  abstract get(name: string): Promise<string | undefined>;
  abstract list(): Promise<SecretKeyInfo[]>;

  constructor(protected readonly env: NodeJS.ProcessEnv) {}

  /** The `secrets_read_only` error for `what` ("create secrets"). */
  protected abstract refusal(what: string): SkepError;

  async create(): Promise<void> {
    throw this.refusal('create secrets');
  }

  async update(): Promise<void> {
    throw this.refusal('update secrets');
  }

  async delete(): Promise<void> {
    throw this.refusal('delete secrets');
  }

  close(): void {}
}
