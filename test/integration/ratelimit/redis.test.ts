/**
 * Rate limits shared through real Redis (as ToolHive shares them): two proxies, each in
 * front of its own server-everything child, both with the `ratelimit` stage on one Redis,
 * spend one budget — standalone and on a 3-master Cluster (the keys' hash tag keeps the
 * multi-key script in one slot). The official MCP SDK client gets the reference's 429. The
 * buckets are the reference's hashes with TTLs; Redis stopped mid-way: calls are allowed
 * (fail-open) and a WARN says so; Redis unreachable at start: a start error.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { rateLimitStage } from '../../../src/dataplane/pipeline/stages/rate-limit.js';
import type { Stage } from '../../../src/dataplane/pipeline/types.js';
import { isSkepError, type Logger, silentLogger } from '../../../src/shared/index.js';
import { parseRunConfig } from '../../../src/workloads/index.js';
import { cli, REDIS_HINT, redisAvailable, startRedis, startRedisCluster } from '../../helpers/redis.js';
import { requireService } from '../../helpers/services.js';
import { proxyFor, spawnEverything } from '../proxy/helpers.js';
import { assertLimited, echo, sdkClient } from './helpers.js';

const PASSWORD = 'rate-limit-cluster-password-42';
const runConfig = parseRunConfig({ name: 'everything', image: 'npx://x' });

async function limitedProxy(
  t: TestContext,
  parameters: Record<string, unknown>,
  logger: Logger = silentLogger,
): Promise<{ url: string; stage: Stage }> {
  const stage = await rateLimitStage.create(parameters, {
    config: runConfig,
    logger,
    secretLookup: async () => undefined,
  });
  assert.ok(stage !== undefined);
  t.after(() => stage.close?.());
  const proxy = await proxyFor(t, spawnEverything(t), { middlewares: [stage], serverName: 'everything' });
  return { url: proxy.url, stage };
}

/** A tools/call POST without the SDK, to read the 429's headers. */
async function rawCall(url: string): Promise<Response> {
  return fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'raw-1',
      method: 'tools/call',
      params: { name: 'echo', arguments: {} },
    }),
  });
}

test(
  'standalone Redis: two proxies share one budget; the reference keys, fields and TTLs',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const redis = await startRedis();
    t.after(() => redis.stop());
    const parameters = {
      namespace: 'team-a',
      server_name: 'everything',
      config: {
        shared: { maxTokens: 5, refillPeriod: '1h' },
        tools: [{ name: 'echo', perUser: { maxTokens: 4, refillPeriod: '30m' } }],
      },
      redis_addr: redis.addr,
      redis_db: 2,
    };
    const a = await limitedProxy(t, parameters);
    const b = await limitedProxy(t, parameters);
    const clientA = await sdkClient(t, a.url);
    const clientB = await sdkClient(t, b.url, true);
    // Listing is never limited.
    for (let i = 0; i < 8; i++) assert.ok((await clientA.listTools()).tools.length > 0);

    // Calls alternate between the proxies; the local user's per-tool bucket (4) runs out first.
    const outcomes = [];
    for (let i = 0; i < 5; i++) outcomes.push(await echo(i % 2 === 0 ? clientA : clientB, `m${i}`));
    assert.deepEqual(
      outcomes.slice(0, 4).map((o) => o.ok),
      [true, true, true, true],
    );
    // per-user tool bucket: 4 tokens per 30 min → ceil(1800 / 4) = 450 s.
    assertLimited(outcomes[4] as (typeof outcomes)[number], 450);

    // The reference's keys, in db 2: hashes {tokens, last_refill µs}, TTL ceil(2 × period).
    const prefix = 'thv:rl:{team-a:everything}';
    const keys = cli(redis.port, undefined, '-n', '2', '--scan', '--pattern', 'thv:rl:*')
      .trim()
      .split('\n')
      .sort();
    assert.equal(keys.length, 2, keys.join(', '));
    assert.equal(keys[0], `${prefix}:shared`);
    assert.match(keys[1] as string, /^thv:rl:\{team-a:everything\}:user-tool:echo:.+$/);
    const shared = cli(redis.port, undefined, '-n', '2', 'HGETALL', `${prefix}:shared`).trim().split('\n');
    assert.equal(shared[0], 'tokens');
    assert.ok(
      Math.abs(Number(shared[1]) - 1) < 0.01,
      `4 of 5 shared tokens spent, the refused call took none: ${shared[1]}`,
    );
    assert.equal(shared[2], 'last_refill');
    const lastRefillUs = Number(shared[3]);
    assert.ok(
      Number.isInteger(lastRefillUs) && Math.abs(lastRefillUs / 1000 - Date.now()) < 60_000,
      String(shared[3]),
    );
    const ttl = Number(cli(redis.port, undefined, '-n', '2', 'TTL', `${prefix}:shared`).trim());
    assert.ok(ttl > 7000 && ttl <= 7200, `TTL ceil(2 × 1h) = 7200 s, got ${ttl}`);
    assert.equal(cli(redis.port, undefined, '-n', '0', 'DBSIZE').trim(), '0', 'nothing in db 0');

    // Another user would still have the shared bucket's last token; the raw 429's headers.
    const raw = await rawCall(b.url);
    assert.equal(raw.status, 429);
    assert.equal(raw.headers.get('retry-after'), '450');
    assert.match(raw.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await raw.json(), {
      jsonrpc: '2.0',
      id: 'raw-1',
      error: { code: 429, message: 'Rate limit exceeded', data: { retryAfterSeconds: 450 } },
    });
  },
);

test(
  'Redis stopped mid-way: calls are allowed (fail-open) and a WARN says so',
  { timeout: 120_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const redis = await startRedis();
    let stopped = false;
    t.after(() => (stopped ? undefined : redis.stop()));
    const warnings: string[] = [];
    const logger: Logger = {
      ...silentLogger,
      warn: (_obj: unknown, msg?: string) => void warnings.push(msg ?? ''),
    };
    const { url } = await limitedProxy(
      t,
      {
        server_name: 'everything',
        config: { shared: { maxTokens: 2, refillPeriod: '1h' } },
        redis_addr: redis.addr,
      },
      logger,
    );
    const client = await sdkClient(t, url);
    assert.equal((await echo(client, 'one')).ok, true);
    assert.equal((await echo(client, 'two')).ok, true);
    assertLimited(await echo(client, 'three'), 1800);
    await redis.stop();
    stopped = true;
    for (let i = 0; i < 4; i++) {
      const outcome = await echo(client, `open ${i}`);
      assert.deepEqual(outcome, { ok: true, text: `Echo: open ${i}` });
    }
    assert.equal(warnings.length, 1, 'one WARN for the burst (rate-limited logging)');
    assert.match(
      warnings[0] as string,
      /bucket store failed; 1 call\(s\) allowed without a limit \(fail-open\)/,
    );
  },
);

test('Redis unreachable at start: a start error naming the address field', async () => {
  await assert.rejects(
    rateLimitStage.create(
      { config: { shared: { maxTokens: 1, refillPeriod: '1s' } }, redis_addr: '127.0.0.1:1' },
      { config: runConfig, logger: silentLogger, secretLookup: async () => undefined },
    ),
    (err: unknown) =>
      isSkepError(err) &&
      err.code === 'unavailable' &&
      /cannot reach Redis at 127\.0\.0\.1:1 \(scaling_config\.session_redis\.address\)/.test(err.message),
  );
});

test(
  'Redis Cluster (3 masters): detected from the node; two proxies share one budget; one slot per server',
  { timeout: 180_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const cluster = await startRedisCluster(PASSWORD);
    t.after(() => cluster.stop());
    const before = process.env['SKEP_SESSION_REDIS_PASSWORD'];
    process.env['SKEP_SESSION_REDIS_PASSWORD'] = PASSWORD;
    t.after(() => {
      if (before === undefined) delete process.env['SKEP_SESSION_REDIS_PASSWORD'];
      else process.env['SKEP_SESSION_REDIS_PASSWORD'] = before;
    });
    const infos: string[] = [];
    const logger: Logger = { ...silentLogger, info: (msg: unknown) => void infos.push(String(msg)) };
    // Four buckets per call (server and tool, shared and per-user): one multi-key script.
    const parameters = {
      namespace: 'prod',
      server_name: 'everything',
      config: {
        shared: { maxTokens: 6, refillPeriod: '1h' },
        perUser: { maxTokens: 5, refillPeriod: '1h' },
        tools: [
          {
            name: 'echo',
            shared: { maxTokens: 3, refillPeriod: '3h' },
            perUser: { maxTokens: 10, refillPeriod: '1h' },
          },
        ],
      },
      // Any node bootstraps discovery; the others are found through it.
      redis_addr: (cluster.nodes[2] as { addr: string }).addr,
    };
    const a = await limitedProxy(t, parameters, logger);
    const b = await limitedProxy(t, parameters, logger);
    assert.ok(
      infos.some((m) => /buckets in Redis \(cluster\)/.test(m)),
      infos.join('\n'),
    );
    const clientA = await sdkClient(t, a.url);
    const clientB = await sdkClient(t, b.url);
    const oks = [];
    for (let i = 0; i < 3; i++) oks.push((await echo(i % 2 === 0 ? clientA : clientB, `c${i}`)).ok);
    assert.deepEqual(oks, [true, true, true]);
    // The tool's shared bucket (3 per 3 h) refuses: ceil(10800 / 3) = 3600 s.
    assertLimited(await echo(clientB, 'c3'), 3600);
    assertLimited(await echo(clientA, 'c4'), 3600);
    // All four keys hash to one slot, on one node.
    const slot = (key: string) => cli(cluster.nodes[0]!.port, PASSWORD, 'CLUSTER', 'KEYSLOT', key).trim();
    const tag = 'thv:rl:{prod:everything}';
    const slots = new Set(
      [`${tag}:shared`, `${tag}:shared:tool:echo`, `${tag}:user:x`, `${tag}:user-tool:echo:x`].map(slot),
    );
    assert.equal(slots.size, 1);
    const owners = cluster.nodes.filter(
      (n) => cli(n.port, PASSWORD, 'EXISTS', `${tag}:shared:tool:echo`).trim() === '1',
    );
    assert.equal(owners.length, 1, 'the bucket lives on exactly one master');
    const tokens = cli(owners[0]!.port, PASSWORD, 'HGET', `${tag}:shared:tool:echo`, 'tokens').trim();
    assert.ok(Number(tokens) < 1, `the tool bucket is spent: ${tokens}`);
    const sharedTokens = Number(cli(owners[0]!.port, PASSWORD, 'HGET', `${tag}:shared`, 'tokens').trim());
    assert.ok(
      Math.abs(sharedTokens - 3) < 0.01,
      `3 of 6 server tokens spent, none by the refused calls: ${sharedTokens}`,
    );
  },
);
