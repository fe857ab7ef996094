/** Secrets: providers (encrypted file, environment, 1Password), setup, and reference resolution. */

export { EncryptedProvider } from './encrypted-provider.js';
export { ENV_SECRET_PREFIX, environmentVariableFor } from './environment-provider.js';
export { type Keyring, secretServiceKeyring } from './keyring.js';
export { PASSWORD_ENV, passwordFilePath } from './password.js';
export {
  formatSecretReference,
  parseSecretReference,
  resolveSecretReferences,
  type SecretReference,
} from './references.js';
export type {
  EncryptedState,
  ProviderDetails,
  SecretLookupOptions,
  SecretsServiceOptions,
  SetupRequest,
} from './service.js';
export { createSecretLookup, SecretsService, secretsFilePath, validateSecretName } from './service.js';
export type { ProviderCapabilities, ProviderType, SecretKeyInfo, SecretLookup } from './types.js';
export { PROVIDER_TYPES } from './types.js';
