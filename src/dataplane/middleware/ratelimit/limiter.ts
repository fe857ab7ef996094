/**
 * Token buckets for `tools/call` (ToolHive's rate-limit behaviour). For one call the limiter picks
 * the applicable buckets — the server's `shared`, the tool's `shared`, and, when the caller has a
 * subject, the server's and the tool's `perUser` — and asks its store to take one token from every
 * one of them or from none (all or nothing, so a call refused by its per-user bucket does not drain
 * the shared one). Two stores sit behind `BucketStore`: in memory (one proxy) and Redis (replicas
 * sharing budgets, `redis-store.ts`).
 *
 * Fail-open: when the store fails (Redis unreachable, a timeout), the call is allowed, as
 * the reference does — a rate limit protects the server's budget, it is not an access
 * control, and an outage of the shared store must not take every workload down with it.
 * Each such call is counted (`stats().failOpen`) and logged at WARN, at most once per
 * `FAIL_OPEN_LOG_INTERVAL_MS` with the number of calls allowed since the last line.
 */
import type { Logger } from '../../../shared/index.js';
import type { BucketLimit, RateLimitConfig } from './config.js';

export type BucketScope = 'shared' | 'per_user';
export type BucketOperation = 'server' | 'tool';

/** One bucket as a store sees it. */
export interface Bucket {
  /** The reference's Redis key (`thv:rl:{<namespace>:<server>}:...`); also the in-memory key. */
  readonly key: string;
  readonly capacity: number;
  readonly refillPeriodMs: number;
  readonly scope: BucketScope;
  readonly operation: BucketOperation;
}

/** Where bucket state lives. */
export interface BucketStore {
  /**
   * Refills every bucket, then takes one token from each if every one holds ≥ 1, else takes
   * none. The index of the first bucket that had < 1 token, or -1 when all gave one; a store
   * in this process answers at once, without a promise.
   */
  consume(buckets: readonly Bucket[]): number | Promise<number>;
  close(): Promise<void>;
}

const ALLOWED: RateLimitDecision = Object.freeze({ allowed: true, failOpen: false });
const ALLOWED_FAIL_OPEN: RateLimitDecision = Object.freeze({ allowed: true, failOpen: true });

export type RateLimitDecision =
  | { readonly allowed: true; readonly failOpen: boolean }
  | {
      readonly allowed: false;
      readonly retryAfterSeconds: number;
      /** `<scope>_<operation>` of the rejecting bucket, as the reference's span attribute. */
      readonly rejectedBy: `${BucketScope}_${BucketOperation}`;
    };

export type BucketKind = `${BucketScope}_${BucketOperation}`;

export interface RateLimitStats {
  allowed: number;
  rejected: number;
  /** Calls allowed because the store failed. */
  failOpen: number;
  /** Store failures by kind (the reference's `error_type`). */
  storeErrors: Record<'timeout' | 'connection' | 'auth' | 'other', number>;
  /**
   * Decisions by bucket kind, counted as the reference's `toolhive_rate_limit_decisions`: an
   * allowed call counts once per bucket it drew from, a rejected one once, for the bucket
   * that refused it. Fail-open calls are not decisions.
   */
  decisions: Record<'allowed' | 'rejected', Record<BucketKind, number>>;
  /** Time the store took per check, seconds: counts per bucket of `bounds` (the last is +Inf). */
  latency: { bounds: readonly number[]; counts: number[]; sum: number; count: number };
}

/** Check latency buckets, seconds: an in-memory check takes µs, a Redis round trip sub-ms to ms. */
export const CHECK_LATENCY_BOUNDS: readonly number[] = Object.freeze([
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
]);

/** Bucket lists kept by `RateLimiter.bucketsFor` (per tool and caller). */
const BUCKET_LISTS = 4096;

function kindOf(b: Bucket): BucketKind {
  if (b.scope === 'shared') return b.operation === 'server' ? 'shared_server' : 'shared_tool';
  return b.operation === 'server' ? 'per_user_server' : 'per_user_tool';
}

const noDecisions = (): Record<BucketKind, number> => ({
  shared_server: 0,
  shared_tool: 0,
  per_user_server: 0,
  per_user_tool: 0,
});

export const FAIL_OPEN_LOG_INTERVAL_MS = 30_000;

/** Seconds until one token is back in `bucket` from empty: ceil(1 / refill rate), at least 1. */
export function retryAfterSeconds(bucket: Pick<Bucket, 'capacity' | 'refillPeriodMs'>): number {
  return Math.max(1, Math.ceil(bucket.refillPeriodMs / 1000 / bucket.capacity));
}

/** The reference's key prefix, with the Redis Cluster hash tag over namespace and server. */
export function keyPrefix(namespace: string, serverName: string): string {
  return `thv:rl:{${namespace}:${serverName}}`;
}

function classify(err: unknown): keyof RateLimitStats['storeErrors'] {
  const message = err instanceof Error ? err.message : String(err);
  if (/timed? ?out/i.test(message)) return 'timeout';
  if (/NOAUTH|WRONGPASS|NOPERM|auth/i.test(message)) return 'auth';
  if (/ECONNREFUSED|ECONNRESET|EPIPE|ENOTFOUND|Connection|closed|writeable|max retries|ready/i.test(message))
    return 'connection';
  return 'other';
}

export interface RateLimiterOptions {
  config: RateLimitConfig;
  namespace: string;
  serverName: string;
  store: BucketStore;
  logger: Logger;
  /** ms clock for log throttling. */
  now?: () => number;
}

export class RateLimiter {
  readonly #config: RateLimitConfig;
  readonly #prefix: string;
  readonly #store: BucketStore;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #tools: Map<string, { shared?: BucketLimit; perUser?: BucketLimit }>;
  readonly #lists = new Map<string, readonly Bucket[]>();
  readonly #stats: RateLimitStats = {
    allowed: 0,
    rejected: 0,
    failOpen: 0,
    storeErrors: { timeout: 0, connection: 0, auth: 0, other: 0 },
    decisions: { allowed: noDecisions(), rejected: noDecisions() },
    latency: {
      bounds: CHECK_LATENCY_BOUNDS,
      counts: new Array<number>(CHECK_LATENCY_BOUNDS.length + 1).fill(0),
      sum: 0,
      count: 0,
    },
  };
  #lastWarnAt = -Infinity;
  #unloggedFailOpen = 0;
  #closed = false;

  constructor(options: RateLimiterOptions) {
    this.#config = options.config;
    this.#prefix = keyPrefix(options.namespace, options.serverName);
    this.#store = options.store;
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#tools = new Map(options.config.tools.map((t) => [t.name, t]));
  }

  /**
   * The buckets a call to `tool` by `subject` draws from, in the reference's order. Kept per
   * (tool, subject), so a call allocates none (at most `BUCKET_LISTS` kept; then started over).
   */
  bucketsFor(tool: string, subject: string | undefined): readonly Bucket[] {
    const key = subject === undefined ? tool : `${tool}\u0000${subject}`;
    let buckets = this.#lists.get(key);
    if (buckets === undefined) {
      buckets = this.#makeBuckets(tool, subject);
      if (this.#lists.size >= BUCKET_LISTS) this.#lists.clear();
      this.#lists.set(key, buckets);
    }
    return buckets;
  }

  #makeBuckets(tool: string, subject: string | undefined): Bucket[] {
    const buckets: Bucket[] = [];
    const add = (
      limit: BucketLimit | undefined,
      suffix: string,
      scope: BucketScope,
      operation: BucketOperation,
    ) => {
      if (limit === undefined) return;
      buckets.push({
        key: `${this.#prefix}:${suffix}`,
        capacity: limit.maxTokens,
        refillPeriodMs: limit.refillPeriodMs,
        scope,
        operation,
      });
    };
    const toolLimit = this.#tools.get(tool);
    add(this.#config.shared, 'shared', 'shared', 'server');
    add(toolLimit?.shared, `shared:tool:${tool}`, 'shared', 'tool');
    if (subject !== undefined && subject !== '') {
      add(this.#config.perUser, `user:${subject}`, 'per_user', 'server');
      add(toolLimit?.perUser, `user-tool:${tool}:${subject}`, 'per_user', 'tool');
    }
    return buckets;
  }

  /**
   * Takes one token for a call to `tool` by `subject` (undefined: no per-user buckets). With
   * buckets in this process the decision comes at once, without a promise.
   */
  check(tool: string, subject: string | undefined): RateLimitDecision | Promise<RateLimitDecision> {
    const buckets = this.bucketsFor(tool, subject);
    if (buckets.length === 0) return ALLOWED;
    const started = performance.now();
    let rejecting: number | Promise<number>;
    try {
      rejecting = this.#store.consume(buckets);
    } catch (err) {
      return this.#storeFailed(started, err);
    }
    if (typeof rejecting === 'number') return this.#decide(buckets, rejecting, started);
    return rejecting.then(
      (index) => this.#decide(buckets, index, started),
      (err: unknown) => this.#storeFailed(started, err),
    );
  }

  #storeFailed(started: number, err: unknown): RateLimitDecision {
    this.#timed(started);
    this.#failOpen(err);
    return ALLOWED_FAIL_OPEN;
  }

  #decide(buckets: readonly Bucket[], rejecting: number, started: number): RateLimitDecision {
    this.#timed(started);
    const bucket = buckets[rejecting];
    if (bucket === undefined) {
      this.#stats.allowed++;
      const allowed = this.#stats.decisions.allowed;
      for (const b of buckets) allowed[kindOf(b)]++;
      return ALLOWED;
    }
    this.#stats.rejected++;
    this.#stats.decisions.rejected[kindOf(bucket)]++;
    return {
      allowed: false,
      retryAfterSeconds: retryAfterSeconds(bucket),
      rejectedBy: `${bucket.scope}_${bucket.operation}`,
    };
  }

  #timed(started: number): void {
    const seconds = (performance.now() - started) / 1000;
    const latency = this.#stats.latency;
    let i = 0;
    while (i < CHECK_LATENCY_BOUNDS.length && seconds > (CHECK_LATENCY_BOUNDS[i] as number)) i++;
    latency.counts[i] = (latency.counts[i] as number) + 1;
    latency.sum += seconds;
    latency.count++;
  }

  #failOpen(err: unknown): void {
    this.#stats.failOpen++;
    this.#stats.storeErrors[classify(err)]++;
    this.#unloggedFailOpen++;
    const now = this.#now();
    if (now - this.#lastWarnAt < FAIL_OPEN_LOG_INTERVAL_MS) return;
    this.#lastWarnAt = now;
    const calls = this.#unloggedFailOpen;
    this.#unloggedFailOpen = 0;
    this.#logger.warn(
      { err: err instanceof Error ? err.message : String(err), calls_allowed: calls },
      `rate limit: the bucket store failed; ${calls} call(s) allowed without a limit (fail-open)`,
    );
  }

  /** Counters since start (a copy). */
  stats(): RateLimitStats {
    return Object.assign({}, this.#stats, { storeErrors: { ...this.#stats.storeErrors } });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#store.close();
  }
}

interface MemoryBucketState {
  tokens: number;
  lastMs: number;
  refillPeriodMs: number;
}

/**
 * Buckets in this process: for one proxy with no Redis (the reference requires Redis even
 * then). A bucket left alone for a whole refill period is full again, which is what an
 * absent bucket means, so such entries are dropped now and then to keep per-user buckets
 * from growing without bound.
 */
export class MemoryBucketStore implements BucketStore {
  readonly #buckets = new Map<string, MemoryBucketState>();
  readonly #now: () => number;
  #lastSweepMs: number;

  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
    this.#lastSweepMs = this.#now();
  }

  consume(buckets: readonly Bucket[]): number {
    const now = this.#now();
    this.#sweep(now);
    const states: MemoryBucketState[] = [];
    let rejecting = -1;
    buckets.forEach((b, i) => {
      const state = this.#buckets.get(b.key) ?? {
        tokens: b.capacity,
        lastMs: now,
        refillPeriodMs: b.refillPeriodMs,
      };
      if (now > state.lastMs) {
        state.tokens = Math.min(
          b.capacity,
          state.tokens + ((now - state.lastMs) * b.capacity) / b.refillPeriodMs,
        );
        state.lastMs = now;
      }
      state.refillPeriodMs = b.refillPeriodMs;
      states.push(state);
      if (rejecting < 0 && state.tokens < 1) rejecting = i;
    });
    buckets.forEach((b, i) => {
      const state = states[i] as MemoryBucketState;
      if (rejecting < 0) state.tokens -= 1;
      this.#buckets.set(b.key, state);
    });
    return rejecting;
  }

  /** Buckets held (tests). */
  get size(): number {
    return this.#buckets.size;
  }

  #sweep(now: number): void {
    if (now - this.#lastSweepMs < 60_000) return;
    this.#lastSweepMs = now;
    for (const [key, state] of this.#buckets)
      if (now - state.lastMs >= state.refillPeriodMs) this.#buckets.delete(key);
  }

  async close(): Promise<void> {
    this.#buckets.clear();
  }
}
