/**
 * The `encrypted` provider: secrets in one AES-256-GCM file (mode 0600) in the data dir.
 *
 * Every change is a read-modify-write under a cross-process lock (`ProcessLock`), ending in
 * an atomic replace (temp file + fsync + rename + directory fsync). Readers need no lock:
 * they see the old or the new file, never a mix. A writer killed at any point leaves the
 * last acknowledged file intact; its temp file is swept by the next writer.
 *
 * A file that fails to open (wrong password, tampered) is never overwritten: every change
 * decrypts the current file first and stops on the first error.
 */
import { createHash } from 'node:crypto';
import { open, readdir, readFile, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { SkepError, writeFileAtomic } from '../shared/index.js';
import { ProcessLock } from './process-lock.js';
import {
  deriveKey,
  type KdfParams,
  newKdfParams,
  parseEnvelope,
  type SecretMap,
  seal,
  unseal,
} from './sealed-file.js';
import type { ProviderCapabilities, SecretKeyInfo, SecretProvider } from './types.js';

export const ENCRYPTED_CAPABILITIES: ProviderCapabilities = Object.freeze({
  can_read: true,
  can_write: true,
  can_delete: true,
  can_list: true,
  can_cleanup: true,
});

export interface EncryptedProviderOptions {
  /** The encrypted file. */
  file: string;
  /** The lock database (defaults to `<file>.lock`). */
  lockFile?: string;
  /** Supplies the password when the store is opened; called once per operation. */
  password: () => Promise<string>;
}

interface Snapshot {
  secrets: SecretMap;
  /** Undefined when the file is missing or empty (a new store). */
  kdf: KdfParams | undefined;
}

export class EncryptedProvider implements SecretProvider {
  readonly type = 'encrypted' as const;
  readonly capabilities = ENCRYPTED_CAPABILITIES;
  readonly file: string;
  readonly #password: () => Promise<string>;
  readonly #lock: ProcessLock;
  /** Derived keys by (password hash, KDF parameters): scrypt runs once per process and salt. */
  readonly #keys = new Map<string, Promise<Buffer>>();
  /** Ids of keys whose derivation has finished (usable without waiting for scrypt). */
  readonly #ready = new Set<string>();

  constructor(options: EncryptedProviderOptions) {
    this.file = options.file;
    this.#password = options.password;
    this.#lock = new ProcessLock(options.lockFile ?? `${options.file}.lock`);
  }

  async get(name: string): Promise<string | undefined> {
    const { secrets } = await this.#read(await this.#password());
    return secrets.get(name);
  }

  async list(): Promise<SecretKeyInfo[]> {
    const { secrets } = await this.#read(await this.#password());
    return [...secrets.keys()].sort().map((key) => ({ key }));
  }

  create(name: string, value: string): Promise<void> {
    return this.#mutate((secrets) => {
      if (secrets.has(name))
        throw new SkepError('secret_exists', `secret '${name}' already exists; update it instead`);
      secrets.set(name, value);
    });
  }

  update(name: string, value: string): Promise<void> {
    return this.#mutate((secrets) => {
      if (!secrets.has(name)) throw new SkepError('secret_not_found', `secret '${name}' does not exist`);
      secrets.set(name, value);
    });
  }

  delete(name: string): Promise<void> {
    return this.#mutate((secrets) => {
      if (!secrets.delete(name)) throw new SkepError('secret_not_found', `secret '${name}' does not exist`);
    });
  }

  /**
   * Opens the store with the current password, creating an empty one when there is none
   * yet. Used by setup: afterwards the password is bound to the file.
   */
  async initialize(): Promise<{ created: boolean; count: number }> {
    const password = await this.#password();
    return this.#lock.withLock(async () => {
      await this.#sweepTempFiles();
      const snapshot = await this.#read(password);
      if (snapshot.kdf !== undefined) return { created: false, count: snapshot.secrets.size };
      await this.#write(snapshot.secrets, password, newKdfParams());
      return { created: true, count: 0 };
    });
  }

  /**
   * Re-encrypts every secret under `next` with a fresh salt. The current password must open
   * the file first; on any failure the file is left as it was.
   */
  async changePassword(next: string): Promise<{ count: number }> {
    const current = await this.#password();
    return this.#lock.withLock(async () => {
      await this.#sweepTempFiles();
      const { secrets } = await this.#read(current);
      await this.#write(secrets, next, newKdfParams());
      return { count: secrets.size };
    });
  }

  close(): void {
    this.#lock.close();
    this.#keys.clear();
    this.#ready.clear();
  }

  async #mutate(change: (secrets: SecretMap) => void): Promise<void> {
    const password = await this.#password();
    // scrypt is slow by design: never derive a key while holding the lock, or ten writers
    // that each meet a salt they have not seen yet would queue behind each other's KDF runs.
    // Inside the lock, a key that is not ready yet releases the lock, is derived outside it,
    // and the change is retried.
    let fresh = (await this.#currentKdf().catch(() => undefined)) ?? newKdfParams();
    for (;;) {
      await this.#keyFor(password, fresh);
      const missing = await this.#lock.withLock(async (): Promise<KdfParams | undefined> => {
        await this.#sweepTempFiles();
        const kdf = await this.#currentKdf();
        if (kdf !== undefined && !this.#keyReady(password, kdf)) return kdf;
        const snapshot = await this.#read(password);
        change(snapshot.secrets);
        await this.#write(snapshot.secrets, password, snapshot.kdf ?? fresh);
        return undefined;
      });
      if (missing === undefined) return;
      fresh = missing;
    }
  }

  /** The KDF parameters of the file on disk, or undefined when there is no store yet. */
  async #currentKdf(): Promise<KdfParams | undefined> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    return bytes.length === 0 ? undefined : parseEnvelope(bytes, this.file).kdf;
  }

  async #read(password: string): Promise<Snapshot> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { secrets: new Map(), kdf: undefined };
      throw err;
    }
    if (bytes.length === 0) return { secrets: new Map(), kdf: undefined };
    const envelope = parseEnvelope(bytes, this.file);
    const secrets = await unseal(envelope, (kdf) => this.#keyFor(password, kdf), this.file);
    return { secrets, kdf: envelope.kdf };
  }

  async #write(secrets: SecretMap, password: string, kdf: KdfParams): Promise<void> {
    const key = await this.#keyFor(password, kdf);
    await writeFileAtomic(this.file, seal(secrets, key, kdf), 0o600);
    // Make the rename itself durable (it lives in the directory entry).
    const dir = await open(dirname(this.file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  #keyId(password: string, kdf: KdfParams): string {
    return createHash('sha256')
      .update(JSON.stringify([password, kdf.N, kdf.r, kdf.p, kdf.salt]))
      .digest('base64');
  }

  #keyReady(password: string, kdf: KdfParams): boolean {
    return this.#ready.has(this.#keyId(password, kdf));
  }

  #keyFor(password: string, kdf: KdfParams): Promise<Buffer> {
    const id = this.#keyId(password, kdf);
    let key = this.#keys.get(id);
    if (key === undefined) {
      key = deriveKey(password, kdf);
      key.then(
        () => this.#ready.add(id),
        () => this.#keys.delete(id),
      );
      this.#keys.set(id, key);
    }
    return key;
  }

  /** Removes temp files left by a writer that died mid-write (only the lock holder writes). */
  async #sweepTempFiles(): Promise<void> {
    const prefix = `.${basename(this.file)}.tmp-`;
    let entries: string[];
    try {
      entries = await readdir(dirname(this.file));
    } catch {
      return;
    }
    await Promise.all(
      entries
        .filter((e) => e.startsWith(prefix))
        .map((e) => rm(join(dirname(this.file), e), { force: true })),
    );
  }
}
