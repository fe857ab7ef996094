/**
 * The secrets domain service: sets up the provider (persisted in the store's settings),
 * describes it, and lists, creates, updates and deletes secrets through it. Used by the
 * HTTP routes, the CLI and — through `createSecretLookup` — by workload start-up in any
 * process. No method ever logs or returns a value except `get`.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { SkepPaths } from '../config/index.js';
import { definedOnly, SkepError } from '../shared/index.js';
import { readSetting, type Store, writeSetting } from '../store/index.js';
import { EncryptedProvider } from './encrypted-provider.js';
import { EnvironmentProvider } from './environment-provider.js';
import { type Keyring, secretServiceKeyring } from './keyring.js';
import { OnePasswordProvider } from './onepassword-provider.js';
import { generatePassword, PASSWORD_ENV, PasswordSource, validateNewPassword } from './password.js';
import {
  isProviderType,
  PROVIDER_TYPES,
  type ProviderCapabilities,
  type ProviderType,
  type SecretKeyInfo,
  type SecretLookup,
  type SecretProvider,
} from './types.js';

/** The store setting that records the chosen provider. */
export const SECRETS_SETTING = 'secrets.provider';
export const SECRETS_FILE_NAME = 'secrets.enc';
const MAX_NAME_LENGTH = 256;

interface SecretsSetting {
  provider_type: ProviderType;
  setup_completed: boolean;
}

export interface SetupRequest {
  provider_type: string;
  /** Encrypted only: the password to open (or create) the store with. */
  password?: string | undefined;
  /** Encrypted only: re-encrypt every secret under this password. */
  new_password?: string | undefined;
  /**
   * Encrypted only: keep a given password in the OS keyring (else the 0600 password file) so
   * that other processes can open the store. Default true (the API); the CLI asks for it with
   * `--save-password`. A generated password is always saved (nobody else knows it), and a
   * new password replaces a saved one.
   */
  save_password?: boolean | undefined;
}

/** What `skep secret setup` needs to know before it asks for anything. */
export interface EncryptedState {
  /** The encrypted store exists (it has a password already). */
  exists: boolean;
  /** Where a saved password comes from, if one is saved. */
  saved: 'environment' | 'keyring' | 'file' | undefined;
}

export interface ProviderDetails {
  name: 'default';
  provider_type: ProviderType;
  capabilities: ProviderCapabilities;
}

export interface SecretsServiceOptions {
  store: Store;
  paths: SkepPaths;
  env?: NodeJS.ProcessEnv;
  /** Defaults to the Secret Service keyring (usable only when present). */
  keyring?: Keyring;
  /** CLI only: asks for the password when none is saved. */
  askPassword?: () => Promise<string | undefined>;
}

export function secretsFilePath(paths: SkepPaths): string {
  return join(paths.dataDir, SECRETS_FILE_NAME);
}

/** Names: 1–256 characters, no control characters, no comma (`<name>,target=<ENV>` references). */
export function validateSecretName(name: string): void {
  if (name === '') throw new SkepError('invalid_name', 'the secret key is required');
  if (name.length > MAX_NAME_LENGTH) {
    throw new SkepError('invalid_name', `the secret key is longer than ${MAX_NAME_LENGTH} characters`);
  }
  if (/[\u0000-\u001f\u007f,]/.test(name)) {
    throw new SkepError('invalid_name', 'the secret key must not contain commas or control characters');
  }
}

function validateValue(value: string): void {
  if (value === '') throw new SkepError('bad_request', 'the secret value is required and must not be empty');
}

export class SecretsService {
  readonly #store: Store;
  readonly #paths: SkepPaths;
  readonly #env: NodeJS.ProcessEnv;
  readonly #passwords: PasswordSource;
  readonly #providers = new Map<ProviderType, SecretProvider>();
  #closed = false;

  constructor(options: SecretsServiceOptions) {
    this.#store = options.store;
    this.#paths = options.paths;
    this.#env = options.env ?? process.env;
    this.#passwords = new PasswordSource({
      env: this.#env,
      paths: options.paths,
      keyring: options.keyring ?? secretServiceKeyring(this.#env),
      ...definedOnly({ ask: options.askPassword }),
    });
  }

  get secretsFile(): string {
    return secretsFilePath(this.#paths);
  }

  /** Whether the encrypted store exists and where a saved password is; never prompts. */
  async encryptedState(): Promise<EncryptedState> {
    const origin = (await this.#passwords.saved())?.origin;
    return { exists: await hasContent(this.secretsFile), saved: origin === 'prompt' ? undefined : origin };
  }

  /** Sets up or reconfigures the provider; validates it before recording the choice. */
  async setup(request: SetupRequest): Promise<{ provider_type: ProviderType; message: string }> {
    const type = request.provider_type;
    if (type === '') throw new SkepError('invalid_config', 'provider type cannot be empty');
    if (!isProviderType(type)) {
      throw new SkepError(
        'invalid_config',
        `invalid secrets provider type: ${type} (valid types: ${PROVIDER_TYPES.join(', ')})`,
      );
    }
    if (
      type !== 'encrypted' &&
      (request.password !== undefined ||
        request.new_password !== undefined ||
        request.save_password !== undefined)
    ) {
      throw new SkepError(
        'invalid_config',
        `password, new_password and save_password apply only to the encrypted provider, not ${type}`,
      );
    }
    let note = '';
    if (type === 'encrypted') {
      note = await this.#setupEncrypted(
        request.password,
        request.new_password,
        request.save_password !== false,
      );
    } else if (type === '1password') {
      try {
        await new OnePasswordProvider(this.#env).verify();
      } catch (err) {
        throw new SkepError(
          'secrets_provider_unavailable',
          `cannot use the 1Password provider: ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
    const previous = readSetting<SecretsSetting>(this.#store, SECRETS_SETTING);
    writeSetting(this.#store, SECRETS_SETTING, {
      provider_type: type,
      setup_completed: true,
    } satisfies SecretsSetting);
    const verb = previous?.setup_completed === true ? 'reconfigured' : 'setup';
    return { provider_type: type, message: `Secrets provider ${verb} successfully${note}` };
  }

  details(): ProviderDetails {
    const provider = this.#provider();
    return { name: 'default', provider_type: provider.type, capabilities: { ...provider.capabilities } };
  }

  async listKeys(): Promise<SecretKeyInfo[]> {
    return this.#providerThatCan('can_list', 'listing secrets').list();
  }

  async get(name: string): Promise<string | undefined> {
    validateSecretName(name);
    return this.#provider().get(name);
  }

  async create(name: string, value: string): Promise<void> {
    validateSecretName(name);
    validateValue(value);
    await this.#providerThatCan('can_write', 'creating secrets').create(name, value);
  }

  async update(name: string, value: string): Promise<void> {
    validateSecretName(name);
    validateValue(value);
    await this.#providerThatCan('can_write', 'updating secrets').update(name, value);
  }

  async delete(name: string): Promise<void> {
    validateSecretName(name);
    await this.#providerThatCan('can_delete', 'deleting secrets').delete(name);
  }

  /** A lookup for workload start-up: `undefined` for a missing secret. */
  lookup(): SecretLookup {
    return (name) => this.get(name);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const provider of this.#providers.values()) provider.close();
    this.#providers.clear();
  }

  /** The configured provider; refused (`readOnly`) when it lacks `capability` for `action`. */
  #providerThatCan(capability: 'can_list' | 'can_write' | 'can_delete', action: string): SecretProvider {
    const provider = this.#provider();
    if (!provider.capabilities[capability]) throw readOnly(provider.type, action);
    return provider;
  }

  #provider(): SecretProvider {
    if (this.#closed) throw new Error('SecretsService used after close()');
    const setting = readSetting<SecretsSetting>(this.#store, SECRETS_SETTING);
    if (setting === undefined || !setting.setup_completed || !isProviderType(setting.provider_type)) {
      throw new SkepError(
        'secrets_not_setup',
        `secrets provider not configured: run 'skep secret setup' or POST /api/v1beta/secrets with {"provider_type": "encrypted"} to set one up first`,
      );
    }
    const type = setting.provider_type;
    let provider = this.#providers.get(type);
    if (provider === undefined) {
      provider = this.#build(type, () => this.#passwords.require());
      this.#providers.set(type, provider);
    }
    return provider;
  }

  #build(type: ProviderType, password: () => Promise<string>): SecretProvider {
    switch (type) {
      case 'encrypted':
        return new EncryptedProvider({ file: this.secretsFile, password });
      case 'environment':
        return new EnvironmentProvider(this.#env);
      case '1password':
        return new OnePasswordProvider(this.#env);
    }
  }

  /** Opens or creates the encrypted store, optionally changes its password; returns a note. */
  async #setupEncrypted(
    given: string | undefined,
    next: string | undefined,
    saveGiven: boolean,
  ): Promise<string> {
    const fromEnv = this.#passwords.fromEnvironment();
    if (given !== undefined && fromEnv !== undefined && given !== fromEnv) {
      throw new SkepError(
        'secrets_password_from_env',
        `${PASSWORD_ENV} is set and always wins: omit the password, pass the same one, or unset ${PASSWORD_ENV}`,
      );
    }
    if (next !== undefined && fromEnv !== undefined) {
      throw new SkepError(
        'secrets_password_from_env',
        `${PASSWORD_ENV} is set: changing the password would leave it stale. Unset it, pass the current password as 'password', and retry`,
      );
    }
    if (given === '')
      throw new SkepError('bad_request', 'password cannot be empty; omit it to have one generated');
    const exists = await hasContent(this.secretsFile);
    let current: string;
    let origin: 'given' | 'generated' | 'environment' | 'keyring' | 'file' | 'prompt';
    if (given !== undefined) {
      current = given;
      origin = 'given';
    } else {
      const saved = await this.#passwords.resolve();
      if (saved !== undefined) {
        current = saved.password;
        origin = saved.origin;
      } else if (exists) {
        throw new SkepError(
          'secrets_locked',
          `the encrypted store ${this.secretsFile} exists but no password is saved: pass its password, or set ${PASSWORD_ENV}`,
        );
      } else {
        current = generatePassword();
        origin = 'generated';
      }
    }
    if (!exists) validateNewPassword(current);
    if (next !== undefined) validateNewPassword(next, 'new_password');

    const provider = new EncryptedProvider({ file: this.secretsFile, password: async () => current });
    let count: number;
    try {
      // Opens with `current` (wrong password → secrets_locked, tampered → secrets_corrupt;
      // both before anything is written) or creates an empty store bound to it.
      count = (await provider.initialize()).count;
      if (next !== undefined) count = (await provider.changePassword(next)).count;
    } finally {
      provider.close();
    }
    const final = next ?? current;
    const changed = next !== undefined ? ` ${count} secret(s) were re-encrypted under the new password.` : '';
    if (origin === 'environment') return `; the password comes from ${PASSWORD_ENV}.${changed}`;
    if (next === undefined && (origin === 'keyring' || origin === 'file')) {
      return `; using the saved password (${origin === 'file' ? this.#passwords.file : 'OS keyring'}).${changed}`;
    }
    // A password the caller gave is kept only when asked; a generated one always (nobody else
    // knows it), and a new password replaces a saved one.
    if (origin !== 'generated' && origin !== 'keyring' && origin !== 'file' && !saveGiven) {
      return (
        `; the password was not saved anywhere: commands in a terminal ask for it, and \`skep serve\` ` +
        `and its workloads need it in ${PASSWORD_ENV} ('skep secret setup --save-password' keeps it ` +
        `in the OS keyring, else in a 0600 file).${changed}`
      );
    }
    const saved = await this.#passwords.save(final);
    const what =
      origin === 'generated' ? 'a strong password was generated and saved' : 'the password was saved';
    if (saved.where === 'keyring') return `; ${what} in ${saved.description}.${changed}`;
    return `; ${what} to ${saved.path} (mode 0600) because no OS keyring is usable here (${saved.reason}); set ${PASSWORD_ENV} to use your own instead.${changed}`;
  }
}

async function hasContent(file: string): Promise<boolean> {
  try {
    return (await stat(file)).size > 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

function readOnly(type: ProviderType, what: string): SkepError {
  return new SkepError('secrets_read_only', `secrets provider ${type} does not support ${what}`);
}

export interface SecretLookupOptions {
  store: Store;
  paths: SkepPaths;
  env?: NodeJS.ProcessEnv;
  keyring?: Keyring;
}

/**
 * A `SecretLookup` for any process (API server, CLI, detached workload runner): it reads
 * the provider choice from the store and the password from `SKEP_SECRETS_PASSWORD`, the
 * keyring or the password file. Throws `secrets_not_setup` when no provider is set up.
 */
export function createSecretLookup(options: SecretLookupOptions): SecretLookup {
  return new SecretsService(options).lookup();
}
