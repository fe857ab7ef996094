/**
 * Opaque, HMAC-signed tokens for authorization codes and refresh tokens. A token is
 * `<prefix>_<random>.<signature>` where the signature is HMAC-SHA256(secret, random). The
 * signature is also the storage key, so a leaked storage dump does not yield usable tokens
 * and a token that was never issued by a holder of the secret is refused before any
 * storage lookup. The first secret signs; older secrets still verify (rotation). Signature
 * checks use a constant-time comparison.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export class OpaqueTokens {
  readonly #secrets: Buffer[];

  constructor(secrets: Buffer[]) {
    if (secrets.length === 0) throw new Error('OpaqueTokens needs at least one secret');
    this.#secrets = secrets;
  }

  /** Mints a token; returns it with the signature that keys its storage record. */
  mint(prefix: string): { token: string; signature: string } {
    const random = randomBytes(32).toString('base64url');
    const signature = this.#sign(this.#secrets[0] as Buffer, random);
    return { token: `${prefix}_${random}.${signature}`, signature };
  }

  /** Returns the storage signature when the token was signed by any known secret, else undefined. */
  verify(prefix: string, token: string): string | undefined {
    if (typeof token !== 'string' || token.length > 256 || !token.startsWith(`${prefix}_`)) return undefined;
    const dot = token.lastIndexOf('.');
    if (dot < 0) return undefined;
    const random = token.slice(prefix.length + 1, dot);
    const given = Buffer.from(token.slice(dot + 1), 'utf8');
    for (const secret of this.#secrets) {
      const expected = Buffer.from(this.#sign(secret, random), 'utf8');
      if (expected.length === given.length && timingSafeEqual(expected, given)) return token.slice(dot + 1);
    }
    return undefined;
  }

  #sign(secret: Buffer, random: string): string {
    return createHmac('sha256', secret).update(random).digest('base64url');
  }
}
