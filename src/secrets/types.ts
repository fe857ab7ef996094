/**
 * The secrets provider interface. Every provider (encrypted file, environment, 1Password)
 * implements the same narrow contract; what a provider cannot do is declared in its
 * capabilities, and the operation then fails with `secrets_read_only` (HTTP 405).
 */

export const PROVIDER_TYPES = ['encrypted', '1password', 'environment'] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

export interface ProviderCapabilities {
  can_read: boolean;
  can_write: boolean;
  can_delete: boolean;
  can_list: boolean;
  can_cleanup: boolean;
}

export interface SecretKeyInfo {
  key: string;
  description?: string;
}

/** Resolves a secret name to its value, or `undefined` when the provider has no such secret. */
export type SecretLookup = (name: string) => Promise<string | undefined>;

export interface SecretProvider {
  readonly type: ProviderType;
  readonly capabilities: ProviderCapabilities;
  get(name: string): Promise<string | undefined>;
  list(): Promise<SecretKeyInfo[]>;
  /** Adds a secret; fails with `secret_exists` when the name is taken (checked atomically). */
  create(name: string, value: string): Promise<void>;
  /** Replaces a secret; fails with `secret_not_found` when it is missing (checked atomically). */
  update(name: string, value: string): Promise<void>;
  /** Removes a secret; fails with `secret_not_found` when it is missing. */
  delete(name: string): Promise<void>;
  close(): void;
}

export function isProviderType(value: string): value is ProviderType {
  return (PROVIDER_TYPES as readonly string[]).includes(value);
}
