/**
 * Rate limits for `tools/call` at the proxy (as ToolHive's rate-limit middleware has them): the
 * `rate_limit_config` parser, the token-bucket limiter, and its two stores — in memory for one
 * proxy, Redis for proxies sharing budgets. The proxy stage is `pipeline/stages/rate-limit.ts`.
 */
export {
  type BucketLimit,
  isEmptyRateLimitConfig,
  parseRateLimitConfig,
  parseRefillPeriod,
  type RateLimitConfig,
  type ToolLimit,
} from './config.js';
export type {
  Bucket,
  BucketKind,
  BucketOperation,
  BucketScope,
  BucketStore,
  RateLimitDecision,
  RateLimiterOptions,
  RateLimitStats,
} from './limiter.js';
export type { RedisStoreOptions } from './redis-store.js';
// The limiter and its stores: `./runtime.js`, imported on demand by the rate-limit stage.
