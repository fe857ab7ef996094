/**
 * The on-disk format of the encrypted secrets store.
 *
 * The file is a small JSON envelope: the KDF parameters and salt, a key-check value, and the
 * AES-256-GCM nonce, ciphertext and tag of `{"secrets": {name: value}}`. The key is
 * scrypt(password, salt) — unlike the reference implementation's single unsalted SHA-256 (a fast
 * hash makes a guessed password cheap to try). The header (format, KDF, key check) is bound to the
 * ciphertext as GCM associated data, so it cannot be altered unnoticed.
 *
 * The key check (HMAC-SHA256 of a fixed label under the derived key) lets us tell a wrong
 * password (`secrets_locked`, 400) from a damaged or tampered file (`secrets_corrupt`):
 * GCM alone reports both as the same authentication failure.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from 'node:crypto';
import { SkepError } from '../shared/index.js';

export const FORMAT = 'skep-secrets';
export const FORMAT_VERSION = 1;
/** OWASP-recommended scrypt cost with a 32 MiB memory bound: N=2^15, r=8, p=3. */
export const DEFAULT_KDF = Object.freeze({ name: 'scrypt' as const, N: 2 ** 15, r: 8, p: 3 });
/** Upper bounds on parameters read from a file, so a crafted file cannot exhaust memory or CPU. */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;
const MAX_PLAINTEXT = 32 * 1024 * 1024;
const KEY_CHECK_LABEL = 'skep secrets key check v1';

export interface KdfParams {
  name: 'scrypt';
  N: number;
  r: number;
  p: number;
  /** base64, 16 random bytes */
  salt: string;
}

interface Envelope {
  format: typeof FORMAT;
  version: typeof FORMAT_VERSION;
  kdf: KdfParams;
  key_check: string;
  nonce: string;
  ciphertext: string;
  tag: string;
}

export type SecretMap = Map<string, string>;

export function newKdfParams(): KdfParams {
  return { ...DEFAULT_KDF, salt: randomBytes(16).toString('base64') };
}

export function deriveKey(password: string, kdf: KdfParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFC'),
      Buffer.from(kdf.salt, 'base64'),
      32,
      { N: kdf.N, r: kdf.r, p: kdf.p, maxmem: 256 * kdf.N * kdf.r },
      (err, key) => (err === null ? resolve(key) : reject(err)),
    );
  });
}

function keyCheck(key: Buffer): Buffer {
  return createHmac('sha256', key).update(KEY_CHECK_LABEL).digest();
}

function associatedData(kdf: KdfParams, check: string): Buffer {
  // A fixed field order makes the associated data canonical.
  const { name, N, r, p, salt } = kdf;
  return Buffer.from(JSON.stringify([FORMAT, FORMAT_VERSION, name, N, r, p, salt, check]));
}

/** Encrypts the secrets under `key` (derived from `kdf`); returns the file bytes. */
export function seal(secrets: SecretMap, key: Buffer, kdf: KdfParams): Buffer {
  const sorted = Object.fromEntries([...secrets.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const plaintext = Buffer.from(JSON.stringify({ secrets: sorted }));
  if (plaintext.length > MAX_PLAINTEXT) {
    throw new SkepError(
      'bad_request',
      'the secrets store would exceed 32 MiB; remove secrets you no longer need',
    );
  }
  const check = keyCheck(key).toString('base64');
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(associatedData(kdf, check));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  const envelope: Envelope = {
    format: FORMAT,
    version: FORMAT_VERSION,
    kdf,
    key_check: check,
    nonce: nonce.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
  return Buffer.from(`${JSON.stringify(envelope)}\n`);
}

function corrupt(file: string, why: string, cause?: unknown): SkepError {
  return new SkepError(
    'secrets_corrupt',
    `the secrets file ${file} ${why}; it was not changed. Restore it from a backup, or move it away and set up the provider again`,
    cause === undefined ? undefined : { cause },
  );
}

const isPositiveInt = (v: unknown, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= max;

/** Parses the envelope (no decryption). Throws `secrets_corrupt` for anything malformed. */
export function parseEnvelope(bytes: Buffer, file: string): Envelope {
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw corrupt(file, 'is not a Skep secrets file (not JSON)', err);
  }
  const e = raw as Partial<Envelope> | null;
  if (e === null || typeof e !== 'object' || e.format !== FORMAT)
    throw corrupt(file, 'is not a Skep secrets file');
  if (e.version !== FORMAT_VERSION)
    throw corrupt(file, `has an unsupported format version (${String(e.version)})`);
  const kdf = e.kdf as Partial<KdfParams> | undefined;
  if (
    kdf === undefined ||
    kdf.name !== 'scrypt' ||
    !isPositiveInt(kdf.N, MAX_N) ||
    (kdf.N & (kdf.N - 1)) !== 0 ||
    kdf.N < 2 ||
    !isPositiveInt(kdf.r, MAX_R) ||
    !isPositiveInt(kdf.p, MAX_P) ||
    typeof kdf.salt !== 'string'
  ) {
    throw corrupt(file, 'has invalid key-derivation parameters');
  }
  for (const field of ['key_check', 'nonce', 'ciphertext', 'tag'] as const) {
    if (typeof e[field] !== 'string') throw corrupt(file, `is missing its ${field}`);
  }
  return e as Envelope;
}

/**
 * Opens the file with a key derived from the password (`keyFor` may cache derivations).
 * Wrong password → `secrets_locked`; failed authentication with the right key → `secrets_corrupt`.
 */
export async function unseal(
  envelope: Envelope,
  keyFor: (kdf: KdfParams) => Promise<Buffer>,
  file: string,
): Promise<SecretMap> {
  const key = await keyFor(envelope.kdf);
  const expected = Buffer.from(envelope.key_check, 'base64');
  const actual = keyCheck(key);
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) {
    throw new SkepError(
      'secrets_locked',
      `wrong password for the secrets file ${file}: nothing was changed. Set SKEP_SECRETS_PASSWORD (or the saved password) to the password the store was created with`,
    );
  }
  let plaintext: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(envelope.nonce, 'base64'), {
      authTagLength: 16,
    });
    decipher.setAAD(associatedData(envelope.kdf, envelope.key_check));
    decipher.setAuthTag(Buffer.from(envelope.tag, 'base64'));
    plaintext = Buffer.concat([
      decipher.update(Buffer.from(envelope.ciphertext, 'base64')),
      decipher.final(),
    ]);
  } catch (err) {
    throw corrupt(
      file,
      'failed its integrity check (AES-GCM authentication): it was modified or damaged',
      err,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(plaintext.toString('utf8'));
  } catch (err) {
    throw corrupt(file, 'decrypted to something that is not JSON', err);
  }
  const secrets = (parsed as { secrets?: unknown } | null)?.secrets;
  if (secrets === null || typeof secrets !== 'object' || Array.isArray(secrets)) {
    throw corrupt(file, 'decrypted to an unexpected shape');
  }
  const map: SecretMap = new Map();
  for (const [name, value] of Object.entries(secrets as Record<string, unknown>)) {
    if (typeof value === 'string') map.set(name, value);
  }
  return map;
}
