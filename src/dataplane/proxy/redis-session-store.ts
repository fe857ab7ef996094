/**
 * Sessions in Redis (`scaling_config.session_redis`, as ToolHive stores them), shared by every
 * proxy of a workload: `SET <prefix><id> <json> EX <ttl>`, `GETEX … EX <ttl>` (sliding expiry),
 * `DEL`. One key per session, so a Redis Cluster needs nothing more (the node named in the
 * configuration is asked whether it is one; `connectRedisAt`). The password comes from the
 * environment only. Commands do not queue while Redis is away and each has a deadline
 * (`commandTimeoutMs`), so an outage costs a request at most that long; what the proxy then does is
 * in `shared-sessions.ts`. Loaded only when `session_redis` is configured.
 */
import type { Cluster, Redis } from 'ioredis';
import { closeRedis, connectRedisAt, type RedisTarget } from '../../shared/index.js';
import {
  decodeSession,
  encodeSession,
  SESSION_DEFAULTS,
  type SessionStore,
  type StoredSession,
} from './session-store.js';

export interface RedisSessionStoreOptions extends RedisTarget {
  /** Ends with `:` (`checkKeyPrefix`). */
  keyPrefix: string;
  ttlMs: number;
}

export class RedisSessionStore implements SessionStore {
  readonly kind = 'redis';
  readonly mode: 'standalone' | 'cluster';
  readonly ttlMs: number;
  readonly #client: Redis | Cluster;
  readonly #prefix: string;
  /** Whole seconds, as `EX` takes them (at least 1). */
  readonly #ttlSeconds: number;
  #closed = false;

  private constructor(
    client: Redis | Cluster,
    mode: 'standalone' | 'cluster',
    prefix: string,
    ttlMs: number,
  ) {
    this.#client = client;
    this.mode = mode;
    this.#prefix = prefix;
    this.#ttlSeconds = Math.max(1, Math.round(ttlMs / 1000));
    this.ttlMs = this.#ttlSeconds * 1000;
  }

  /** Connects and pings; `unavailable` / `unauthorized` / `bad_request` with a message naming the field. */
  static async connect(options: RedisSessionStoreOptions): Promise<RedisSessionStore> {
    const { client, mode } = await connectRedisAt(options, {
      purpose: 'session storage',
      defaults: SESSION_DEFAULTS,
    });
    return new RedisSessionStore(client, mode, options.keyPrefix, options.ttlMs);
  }

  #key(id: string): string {
    return this.#prefix + id;
  }

  async load(id: string): Promise<StoredSession | undefined> {
    this.#open();
    const text = await this.#client.getex(this.#key(id), 'EX', this.#ttlSeconds);
    return text === null ? undefined : decodeSession(text);
  }

  async save(session: StoredSession): Promise<void> {
    this.#open();
    await this.#client.set(this.#key(session.id), encodeSession(session), 'EX', this.#ttlSeconds);
  }

  async delete(id: string): Promise<void> {
    this.#open();
    await this.#client.del(this.#key(id));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeRedis(this.#client);
  }

  #open(): void {
    if (this.#closed) throw new Error('the Redis session store is closed');
  }
}
