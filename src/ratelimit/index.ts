/**
 * Rate limits for `tools/call` at the proxy (reference middleware.md §4): the
 * `rate_limit_config` parser, the token-bucket limiter, and its two stores — in memory for
 * one proxy, Redis for proxies sharing budgets. The proxy stage is
 * `pipeline/stages/rate-limit.ts`.
 */
export {
  type BucketLimit,
  isEmptyRateLimitConfig,
  parseRateLimitConfig,
  parseRefillPeriod,
  type RateLimitConfig,
  type ToolLimit,
} from './config.js';
export {
  type Bucket,
  type BucketKind,
  type BucketOperation,
  type BucketScope,
  type BucketStore,
  CHECK_LATENCY_BOUNDS,
  FAIL_OPEN_LOG_INTERVAL_MS,
  keyPrefix,
  MemoryBucketStore,
  type RateLimitDecision,
  RateLimiter,
  type RateLimiterOptions,
  type RateLimitStats,
  retryAfterSeconds,
} from './limiter.js';
export {
  bucketTtlSeconds,
  parseRedisAddress,
  REDIS_STORE_DEFAULTS,
  RedisBucketStore,
  type RedisStoreOptions,
} from './redis-store.js';
