/**
 * The token-bucket limiter (ToolHive's behaviour) over the in-memory store, with a
 * frozen clock: burst = capacity, refill rate maxTokens/refillPeriod, the buckets a call
 * draws from (server/tool × shared/per-user, the reference's keys), all-or-nothing
 * consumption, retry-after from the rejecting bucket, and fail-open when the store fails.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Bucket,
  type BucketStore,
  parseRateLimitConfig,
} from '../../../src/dataplane/middleware/ratelimit/index.js';
import {
  FAIL_OPEN_LOG_INTERVAL_MS,
  MemoryBucketStore,
  RateLimiter,
  retryAfterSeconds,
} from '../../../src/dataplane/middleware/ratelimit/runtime.js';
import { type Logger, silentLogger } from '../../../src/shared/index.js';

function clock(start = 1_000_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

function limiter(config: unknown, now: () => number, store?: BucketStore, logger: Logger = silentLogger) {
  return new RateLimiter({
    config: parseRateLimitConfig(config),
    namespace: 'team-a',
    serverName: 'github',
    store: store ?? new MemoryBucketStore({ now }),
    logger,
    now,
  });
}

/** How many of `n` calls are allowed now. */
async function allowedOf(l: RateLimiter, n: number, tool = 't', sub?: string): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < n; i++) if ((await l.check(tool, sub)).allowed) allowed++;
  return allowed;
}

test('burst = maxTokens; refill rate = maxTokens / refillPeriod, capped at capacity', async () => {
  const c = clock();
  const l = limiter({ shared: { maxTokens: 5, refillPeriod: '10s' } }, c.now);
  assert.equal(await allowedOf(l, 8), 5, 'a full bucket lets maxTokens calls through at once');
  c.advance(1_999);
  assert.equal(await allowedOf(l, 1), 0, '0.9995 tokens after 1.999 s (rate 0.5/s)');
  c.advance(1);
  assert.equal(await allowedOf(l, 2), 1, 'one token after 2 s');
  c.advance(4_000);
  assert.equal(await allowedOf(l, 3), 2, 'two more after 4 s');
  c.advance(3_600_000);
  assert.equal(await allowedOf(l, 9), 5, 'an hour later: full again, never above capacity');
  const { latency, ...counters } = l.stats();
  assert.deepEqual(counters, {
    allowed: 13,
    rejected: 10,
    failOpen: 0,
    storeErrors: { timeout: 0, connection: 0, auth: 0, other: 0 },
    // ToolHive's `toolhive_rate_limit_decisions`: one server-shared bucket per call.
    decisions: {
      allowed: { shared_server: 13, shared_tool: 0, per_user_server: 0, per_user_tool: 0 },
      rejected: { shared_server: 10, shared_tool: 0, per_user_server: 0, per_user_tool: 0 },
    },
  });
  assert.equal(latency.count, 23, 'every check is timed');
  assert.equal(
    latency.counts.reduce((a, b) => a + b, 0),
    23,
  );
  assert.equal(latency.counts.length, latency.bounds.length + 1);
});

test('buckets per call: server shared, tool shared, and per-user ones only with a subject; reference keys', () => {
  const c = clock();
  const l = limiter(
    {
      shared: { maxTokens: 100, refillPeriod: '1m0s' },
      perUser: { maxTokens: 10, refillPeriod: '30s' },
      tools: [
        {
          name: 'search',
          shared: { maxTokens: 5, refillPeriod: '1m' },
          perUser: { maxTokens: 1, refillPeriod: '10s' },
        },
      ],
    },
    c.now,
  );
  const keys = (tool: string, sub?: string) =>
    l.bucketsFor(tool, sub).map((b) => `${b.scope}_${b.operation} ${b.key}`);
  assert.deepEqual(keys('search', 'alice'), [
    'shared_server thv:rl:{team-a:github}:shared',
    'shared_tool thv:rl:{team-a:github}:shared:tool:search',
    'per_user_server thv:rl:{team-a:github}:user:alice',
    'per_user_tool thv:rl:{team-a:github}:user-tool:search:alice',
  ]);
  assert.deepEqual(keys('search', undefined), [
    'shared_server thv:rl:{team-a:github}:shared',
    'shared_tool thv:rl:{team-a:github}:shared:tool:search',
  ]);
  assert.deepEqual(keys('echo', ''), ['shared_server thv:rl:{team-a:github}:shared']);
  assert.deepEqual(keys('echo', 'bob'), [
    'shared_server thv:rl:{team-a:github}:shared',
    'per_user_server thv:rl:{team-a:github}:user:bob',
  ]);
});

test('per-user buckets are separate per subject; a tool entry limits only that tool', async () => {
  const c = clock();
  const l = limiter(
    {
      perUser: { maxTokens: 2, refillPeriod: '1m' },
      tools: [{ name: 'search', shared: { maxTokens: 3, refillPeriod: '1m' } }],
    },
    c.now,
  );
  assert.equal(await allowedOf(l, 5, 'echo', 'alice'), 2);
  assert.equal(await allowedOf(l, 5, 'echo', 'bob'), 2, 'bob has his own bucket');
  // Without a subject no per-user bucket applies (and here nothing else does for echo).
  assert.equal(await allowedOf(l, 5, 'echo', undefined), 5);
  // search: shared by everyone (3), and each user's own 2 still apply.
  assert.equal(await allowedOf(l, 5, 'search', 'carol'), 2);
  assert.equal(await allowedOf(l, 5, 'search', 'dave'), 1, 'the shared tool bucket had 1 left');
  const refused = await l.check('search', undefined);
  assert.deepEqual(refused, { allowed: false, retryAfterSeconds: 20, rejectedBy: 'shared_tool' });
});

test('all or nothing: a call refused by one bucket takes no token from the others', async () => {
  const c = clock();
  const l = limiter(
    { shared: { maxTokens: 3, refillPeriod: '1h' }, perUser: { maxTokens: 1, refillPeriod: '1h' } },
    c.now,
  );
  assert.equal((await l.check('t', 'alice')).allowed, true);
  for (let i = 0; i < 10; i++) {
    const d = await l.check('t', 'alice');
    assert.deepEqual(d, { allowed: false, retryAfterSeconds: 3600, rejectedBy: 'per_user_server' });
  }
  // alice's refusals did not drain the shared bucket: two tokens are left for others.
  assert.equal(await allowedOf(l, 1, 't', 'bob'), 1);
  assert.equal(await allowedOf(l, 1, 't', 'carol'), 1);
  assert.deepEqual(await l.check('t', 'dave'), {
    allowed: false,
    retryAfterSeconds: 1200,
    rejectedBy: 'shared_server',
  });
});

test('the first rejecting bucket in order is reported', async () => {
  const c = clock();
  const store = new MemoryBucketStore({ now: c.now });
  const b = (key: string, capacity: number): Bucket => ({
    key,
    capacity,
    refillPeriodMs: 60_000,
    scope: 'shared',
    operation: 'server',
  });
  assert.equal(await store.consume([b('a', 1), b('b', 1)]), -1);
  assert.equal(await store.consume([b('a', 1), b('b', 1)]), 0);
  assert.equal(await store.consume([b('c', 1), b('b', 1), b('a', 1)]), 1);
  assert.equal(await store.consume([b('c', 1)]), -1, 'c kept its token through the refused call');
});

test('retry-after = ceil(1 / refill rate of the rejecting bucket), at least 1 s', () => {
  assert.equal(retryAfterSeconds({ capacity: 100, refillPeriodMs: 60_000 }), 1);
  assert.equal(retryAfterSeconds({ capacity: 10, refillPeriodMs: 30_000 }), 3);
  assert.equal(retryAfterSeconds({ capacity: 3, refillPeriodMs: 10_000 }), 4);
  assert.equal(retryAfterSeconds({ capacity: 1, refillPeriodMs: 10_000 }), 10);
  assert.equal(retryAfterSeconds({ capacity: 1000, refillPeriodMs: 1_000 }), 1);
  assert.equal(retryAfterSeconds({ capacity: 1, refillPeriodMs: 250 }), 1);
});

test('idle buckets (a whole refill period unused, so full) are dropped from memory', async () => {
  const c = clock();
  const store = new MemoryBucketStore({ now: c.now });
  const l = limiter({ perUser: { maxTokens: 1, refillPeriod: '1s' } }, c.now, store);
  for (let i = 0; i < 50; i++) await l.check('t', `user-${i}`);
  assert.equal(store.size, 50);
  c.advance(61_000);
  assert.equal(await allowedOf(l, 1, 't', 'user-0'), 1);
  assert.equal(store.size, 1, 'only the bucket just used remains');
});

test('fail-open: a store error allows the call, is counted by kind, and WARN is logged at most once per interval', async () => {
  const c = clock();
  let failure: Error | undefined = new Error('connect ECONNREFUSED 127.0.0.1:6379');
  const memory = new MemoryBucketStore({ now: c.now });
  const store: BucketStore = {
    consume: async (buckets) => {
      if (failure !== undefined) throw failure;
      return memory.consume(buckets);
    },
    close: async () => {},
  };
  const warnings: { obj: unknown; msg: string | undefined }[] = [];
  const logger: Logger = {
    ...silentLogger,
    warn: (obj: unknown, msg?: string) => void warnings.push({ obj, msg }),
  };
  const l = limiter({ shared: { maxTokens: 1, refillPeriod: '1h' } }, c.now, store, logger);
  for (let i = 0; i < 5; i++)
    assert.deepEqual(await l.check('t', undefined), { allowed: true, failOpen: true });
  assert.equal(warnings.length, 1, 'one WARN for a burst of failures');
  assert.match(warnings[0]?.msg ?? '', /fail-open/);
  failure = new Error('Command timed out');
  c.advance(FAIL_OPEN_LOG_INTERVAL_MS);
  assert.equal((await l.check('t', undefined)).allowed, true);
  assert.equal(warnings.length, 2);
  assert.deepEqual(
    (warnings[1]?.obj as { calls_allowed: number }).calls_allowed,
    5,
    'the 4 unlogged + this one',
  );
  const stats = l.stats();
  assert.equal(stats.failOpen, 6);
  assert.deepEqual(stats.storeErrors, { timeout: 1, connection: 5, auth: 0, other: 0 });
  // The store is back: limits apply again.
  failure = undefined;
  assert.deepEqual(await allowedOf(l, 3), 1);
});
