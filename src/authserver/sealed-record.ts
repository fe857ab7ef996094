/**
 * Records that hold upstream credentials (the IdP's access, refresh and ID tokens; a
 * dynamically registered client's secret) are sealed before they reach shared storage, so
 * another reader of Redis (an operator, a backup, another tenant of the instance) finds no
 * usable upstream token. AES-256-GCM (NIST SP 800-38D) with a 96-bit random nonce per record
 * and the record's storage key as additional data, so a record moved to another key (another
 * session's) fails authentication. The keys are derived with HKDF-SHA256 (RFC 5869) from the
 * server's HMAC secrets under an info label used for nothing else: the first secret seals,
 * every secret opens (rotation, as for the opaque tokens). A record that does not open (a
 * wrong key, tampering, a plain record an older version wrote) is treated as absent: the user
 * logs in upstream again.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** RFC 5869 §3.2: `info` binds the derived key to this use alone. */
const HKDF_INFO = 'skep authserver: sealed upstream credential records, AES-256-GCM, v1';
const VERSION = 'v1';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class RecordSealer {
  readonly #keys: readonly Buffer[];

  constructor(secrets: readonly Buffer[]) {
    if (secrets.length === 0) throw new Error('RecordSealer needs at least one secret');
    this.#keys = secrets.map((secret) =>
      Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), HKDF_INFO, 32)),
    );
  }

  /** `v1.<nonce>.<ciphertext>.<tag>` (base64url) of `value` as JSON, bound to `key`. */
  seal(key: string, value: unknown): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#keys[0] as Buffer, nonce, {
      authTagLength: TAG_BYTES,
    });
    cipher.setAAD(Buffer.from(key, 'utf8'));
    const sealed = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return [VERSION, nonce, sealed, cipher.getAuthTag()]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  /** The value sealed under `key`, or undefined when `text` does not open with any key. */
  open<T>(key: string, text: string): T | undefined {
    const [version, nonce, sealed, tag, extra] = text.split('.');
    if (
      version !== VERSION ||
      nonce === undefined ||
      sealed === undefined ||
      tag === undefined ||
      extra !== undefined
    )
      return undefined;
    const iv = Buffer.from(nonce, 'base64url');
    const authTag = Buffer.from(tag, 'base64url');
    if (iv.length !== NONCE_BYTES || authTag.length !== TAG_BYTES) return undefined;
    for (const k of this.#keys) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', k, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(key, 'utf8'));
        decipher.setAuthTag(authTag);
        const plain = Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]);
        return JSON.parse(plain.toString('utf8')) as T;
      } catch {
        // Not this key (or not authentic): try the next.
      }
    }
    return undefined;
  }
}
