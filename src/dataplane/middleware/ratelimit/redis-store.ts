/**
 * Token buckets in Redis, shared by every proxy of a workload (atomic and keyed as ToolHive's rate
 * limiter keeps them in Redis). One Lua script per call refills each applicable bucket by the Redis
 * server's clock (`TIME`, so proxies with skewed clocks agree), takes one token from each only if
 * all hold at least one, and otherwise takes none and names the first that refused. Each bucket is
 * a hash `{tokens, last_refill (µs)}` whose key expires ceil(2 × refillPeriod) s after its last
 * use. The keys share the hash tag `{<namespace>:<server>}`, so on Redis Cluster every bucket of a
 * server lives in one slot and the multi-key script is legal.
 *
 * `scaling_config.session_redis` gives only an address: the store asks the node whether it
 * runs in cluster mode (`INFO cluster`) and, if so, connects as a Cluster client with that
 * node as the seed. The password comes from the environment, never from the configuration.
 * The start pings Redis with a timeout; an unreachable Redis is a start error. Afterwards
 * commands do not queue while Redis is away (they fail at once, and the limiter fails open)
 * and each has a deadline, so an outage adds at most `commandTimeoutMs` to a call.
 */
import type { Cluster, Redis } from 'ioredis';
import { closeRedis, connectRedisAt, type RedisTarget } from '../../../shared/index.js';
import type { Bucket, BucketStore } from './limiter.js';

export { parseRedisAddress } from '../../../shared/index.js';

/** KEYS = buckets; ARGV = per bucket: capacity, refill period µs, TTL s. Returns 0 or the 1-based rejecting index. */
const CONSUME = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tokens, lasts, rejecting = {}, {}, 0
for i = 1, #KEYS do
  local cap = tonumber(ARGV[3 * i - 2])
  local period = tonumber(ARGV[3 * i - 1])
  local state = redis.call('HMGET', KEYS[i], 'tokens', 'last_refill')
  local tok, last = tonumber(state[1]), tonumber(state[2])
  if tok == nil or last == nil then
    tok, last = cap, now
  elseif now > last then
    tok = tok + (now - last) * cap / period
    last = now
  end
  if tok > cap then tok = cap end
  tokens[i], lasts[i] = tok, last
  if rejecting == 0 and tok < 1 then rejecting = i end
end
for i = 1, #KEYS do
  local tok = tokens[i]
  if rejecting == 0 then tok = tok - 1 end
  redis.call('HSET', KEYS[i], 'tokens', string.format('%.17g', tok), 'last_refill', string.format('%.0f', lasts[i]))
  redis.call('EXPIRE', KEYS[i], ARGV[3 * i])
end
return rejecting`;

type ScriptClient = (Redis | Cluster) & {
  rateLimitConsume(numKeys: number, ...args: (string | number)[]): Promise<number>;
};

/** Timeouts of the Redis store, ms. */
export const REDIS_STORE_DEFAULTS = {
  /** The start's connect + ping (the reference's 5 s). */
  pingTimeoutMs: 5_000,
  /** One check; beyond it the call fails open. */
  commandTimeoutMs: 1_000,
} as const;

export type RedisStoreOptions = RedisTarget;

/** The TTL of a bucket key: ceil(2 × refillPeriod) s, at least 1. */
export function bucketTtlSeconds(refillPeriodMs: number): number {
  return Math.max(1, Math.ceil((2 * refillPeriodMs) / 1000));
}

export class RedisBucketStore implements BucketStore {
  readonly #client: ScriptClient;
  readonly mode: 'standalone' | 'cluster';
  #closed = false;

  private constructor(client: ScriptClient, mode: 'standalone' | 'cluster') {
    this.#client = client;
    this.mode = mode;
  }

  /** Connects and pings; `unavailable` when Redis does not answer within `pingTimeoutMs`. */
  static async connect(options: RedisStoreOptions): Promise<RedisBucketStore> {
    const { client, mode } = await connectRedisAt(options, {
      purpose: 'rate limit',
      defaults: REDIS_STORE_DEFAULTS,
    });
    const scripted = client as ScriptClient;
    scripted.defineCommand('rateLimitConsume', { lua: CONSUME });
    return new RedisBucketStore(scripted, mode);
  }

  async consume(buckets: readonly Bucket[]): Promise<number> {
    if (this.#closed) throw new Error('the Redis bucket store is closed');
    const args: (string | number)[] = buckets.map((b) => b.key);
    for (const b of buckets)
      args.push(
        b.capacity,
        Math.max(1, Math.round(b.refillPeriodMs * 1000)),
        bucketTtlSeconds(b.refillPeriodMs),
      );
    const rejecting = Number(await this.#client.rateLimitConsume(buckets.length, ...args));
    return rejecting - 1;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeRedis(this.#client);
  }
}
