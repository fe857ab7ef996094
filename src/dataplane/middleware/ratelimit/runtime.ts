/**
 * The half of rate limiting that only a running proxy needs: the limiter and its stores. The
 * pipeline stage imports this module on demand and the index exports only the parser and
 * types, so a workload without rate limits never loads them.
 */
export {
  CHECK_LATENCY_BOUNDS,
  FAIL_OPEN_LOG_INTERVAL_MS,
  keyPrefix,
  MemoryBucketStore,
  RateLimiter,
  retryAfterSeconds,
} from './limiter.js';
export { bucketTtlSeconds, REDIS_STORE_DEFAULTS, RedisBucketStore } from './redis-store.js';
