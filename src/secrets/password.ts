/**
 * Where the password of the encrypted store comes from, in order:
 * 1. `SKEP_SECRETS_PASSWORD` — always wins (CI, containers, detached runners);
 * 2. the OS keyring, when one is usable here;
 * 3. the password file `<configDir>/secrets-password` (mode 0600), written by setup when no
 *    keyring is usable;
 * 4. an interactive prompt (CLI only, when a terminal is attached).
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { SkepPaths } from '../config/index.js';
import { SkepError, writeFileAtomic } from '../shared/index.js';
import type { Keyring } from './keyring.js';

export const PASSWORD_ENV = 'SKEP_SECRETS_PASSWORD';
export const MIN_PASSWORD_LENGTH = 8;

export type PasswordOrigin = 'environment' | 'keyring' | 'file' | 'prompt';

export interface ResolvedPassword {
  password: string;
  origin: PasswordOrigin;
}

export type SavedTo =
  { where: 'keyring'; description: string } | { where: 'file'; path: string; reason: string };

export function passwordFilePath(paths: SkepPaths): string {
  return join(paths.configDir, 'secrets-password');
}

/** 32 random bytes, base64url: 256 bits, safe to paste into an environment variable. */
export function generatePassword(): string {
  return randomBytes(32).toString('base64url');
}

export function validateNewPassword(password: string, what = 'password'): void {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new SkepError('bad_request', `${what} must be at least ${MIN_PASSWORD_LENGTH} characters long`);
  }
}

export interface PasswordSourceOptions {
  env: NodeJS.ProcessEnv;
  paths: SkepPaths;
  keyring: Keyring;
  /** Last resort: asks a person (CLI with a terminal). Returns undefined when it cannot. */
  ask?: () => Promise<string | undefined>;
}

export class PasswordSource {
  readonly #env: NodeJS.ProcessEnv;
  readonly #file: string;
  readonly #keyring: Keyring;
  readonly #ask: (() => Promise<string | undefined>) | undefined;

  constructor(options: PasswordSourceOptions) {
    this.#env = options.env;
    this.#file = passwordFilePath(options.paths);
    this.#keyring = options.keyring;
    this.#ask = options.ask;
  }

  get file(): string {
    return this.#file;
  }

  fromEnvironment(): string | undefined {
    const value = this.#env[PASSWORD_ENV];
    return value === undefined || value === '' ? undefined : value;
  }

  /** The saved password (environment, keyring or file), without prompting. */
  async saved(): Promise<ResolvedPassword | undefined> {
    const fromEnv = this.fromEnvironment();
    if (fromEnv !== undefined) return { password: fromEnv, origin: 'environment' };
    if ((await this.#keyring.probe()).usable) {
      const fromKeyring = await this.#keyring.get();
      if (fromKeyring !== undefined) return { password: fromKeyring, origin: 'keyring' };
    }
    const fromFile = await this.#readFile();
    if (fromFile !== undefined) return { password: fromFile, origin: 'file' };
    return undefined;
  }

  async resolve(): Promise<ResolvedPassword | undefined> {
    const saved = await this.saved();
    if (saved !== undefined) return saved;
    const asked = await this.#ask?.();
    if (asked !== undefined && asked !== '') return { password: asked, origin: 'prompt' };
    return undefined;
  }

  async require(): Promise<string> {
    const resolved = await this.resolve();
    if (resolved === undefined) {
      throw new SkepError(
        'secrets_locked',
        `no password for the encrypted secrets store: set ${PASSWORD_ENV}, or run 'skep secret setup' to save one`,
      );
    }
    return resolved.password;
  }

  /** Keeps the password in the keyring when usable, else in the 0600 password file. */
  async save(password: string): Promise<SavedTo> {
    const probe = await this.#keyring.probe();
    if (probe.usable) {
      await this.#keyring.set(password);
      await rm(this.#file, { force: true });
      return { where: 'keyring', description: this.#keyring.description };
    }
    await writeFileAtomic(this.#file, `${password}\n`, 0o600);
    return { where: 'file', path: this.#file, reason: probe.reason };
  }

  async #readFile(): Promise<string | undefined> {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(this.#file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    if ((Number(info.mode) & 0o077) !== 0) {
      throw new SkepError(
        'secrets_locked',
        `the password file ${this.#file} is readable by other users; run 'chmod 600 ${this.#file}'`,
      );
    }
    const value = (await readFile(this.#file, 'utf8')).replace(/\r?\n$/, '');
    return value === '' ? undefined : value;
  }
}
