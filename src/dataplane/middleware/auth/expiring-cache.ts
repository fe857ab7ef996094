/**
 * A small in-memory cache for credentials that expire (exchanged tokens, STS credentials):
 * entries are dropped at their own deadline, the oldest entry makes room when the cache is
 * full, and concurrent misses for one key share a single load, so a burst of requests with
 * the same subject token costs one round trip to the token service, not one each.
 */

export interface Loaded<V> {
  value: V;
  /** Epoch ms after which the value must not be served. */
  expiresAt: number;
}

export class ExpiringCache<V> {
  readonly #entries = new Map<string, Loaded<V>>();
  readonly #loading = new Map<string, Promise<V>>();
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: { maxEntries: number; now?: () => number }) {
    if (!(options.maxEntries > 0)) throw new Error('maxEntries must be positive');
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): V | undefined {
    const hit = this.#entries.get(key);
    if (hit === undefined) return undefined;
    if (hit.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return hit.value;
  }

  set(key: string, value: V, expiresAt: number): void {
    if (expiresAt <= this.#now()) return;
    this.#entries.delete(key);
    if (this.#entries.size >= this.#maxEntries) this.#evict();
    this.#entries.set(key, { value, expiresAt });
  }

  /** The cached value, or the result of `load` (cached until its deadline). */
  async getOrLoad(key: string, load: () => Promise<Loaded<V>>): Promise<V> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const pending = this.#loading.get(key);
    if (pending !== undefined) return pending;
    const run = (async () => {
      try {
        const loaded = await load();
        this.set(key, loaded.value, loaded.expiresAt);
        return loaded.value;
      } finally {
        this.#loading.delete(key);
      }
    })();
    this.#loading.set(key, run);
    return run;
  }

  clear(): void {
    this.#entries.clear();
  }

  #evict(): void {
    const now = this.#now();
    for (const [k, v] of this.#entries) if (v.expiresAt <= now) this.#entries.delete(k);
    // Maps iterate in insertion order: the first key is the oldest entry.
    while (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }
}
