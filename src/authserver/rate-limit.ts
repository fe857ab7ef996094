/**
 * A token-bucket rate limiter keyed by caller (the client address). Used on the token and
 * registration endpoints to slow down guessing of codes, refresh tokens and PKCE verifiers
 * (RFC 9700 §4.x brute-force guidance) and to cap DCR abuse.
 */
export interface RateLimit {
  /** Tokens added per second. */
  perSecond: number;
  /** Bucket size: how many requests may arrive at once. */
  burst: number;
}

export class RateLimiter {
  readonly #limit: RateLimit;
  readonly #now: () => number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(limit: RateLimit, now: () => number) {
    if (!(limit.perSecond > 0) || !(limit.burst >= 1))
      throw new Error('RateLimiter: perSecond > 0 and burst >= 1');
    this.#limit = limit;
    this.#now = now;
  }

  /** Takes one token; returns 0 when allowed, else the seconds to wait. */
  take(key: string): number {
    const now = this.#now();
    const b = this.#buckets.get(key) ?? { tokens: this.#limit.burst, at: now };
    b.tokens = Math.min(this.#limit.burst, b.tokens + ((now - b.at) / 1000) * this.#limit.perSecond);
    b.at = now;
    if (this.#buckets.size > 10_000) this.#prune(now);
    this.#buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.#limit.perSecond));
  }

  /** Forgets buckets that are full again, so the map does not grow without bound. */
  #prune(now: number): void {
    for (const [k, b] of this.#buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.#limit.perSecond >= this.#limit.burst)
        this.#buckets.delete(k);
    }
  }
}
