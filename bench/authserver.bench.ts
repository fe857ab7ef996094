/**
 * Embedded authorization server throughput, with memory and with Redis (a standalone
 * redis-server started here on loopback) storage:
 * - token endpoint: refresh_token grants over HTTP (each one rotates the refresh token, so
 *   every request reads, writes and consumes in storage and signs a JWT), in 8 concurrent
 *   chains;
 * - token validation: `verifyAccessToken` in-process (signature, claims, revocation lookup).
 * Logins go through a real upstream (oidc-provider) once per chain. Prints one JSON object.
 */
import type { TestContext } from 'node:test';
import { REDIS_HINT, redisAvailable, startRedis } from '../test/helpers/redis.js';
import {
  authorize,
  baseConfig,
  mountAuthServer,
  refresh,
  registerClient,
  startHost,
  startUpstream,
  TEST_ENV,
  type Tokens,
} from '../test/integration/authserver/harness.js';

const CHAINS = 8;
const REFRESHES_PER_CHAIN = Number(process.env['BENCH_REFRESHES'] ?? 150);
const VERIFICATIONS = Number(process.env['BENCH_VERIFICATIONS'] ?? 5000);
const VERIFY_CONCURRENCY = 16;

function percentile(sorted: number[], p: number): number {
  return Number((sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0).toFixed(3));
}

function summary(latencies: number[], elapsedMs: number) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    requests: latencies.length,
    per_second: Math.round((latencies.length / elapsedMs) * 1000),
    p50_ms: percentile(sorted, 50),
    p99_ms: percentile(sorted, 99),
  };
}

async function runMode(storage: 'memory' | 'redis', redisAddr?: string) {
  const cleanups: (() => unknown)[] = [];
  const t = { after: (fn: () => unknown) => cleanups.push(fn) } as unknown as TestContext;
  try {
    const host = await startHost(t);
    const upstream = await startUpstream(t, [host.callbackUrl]);
    const config = baseConfig(host, upstream);
    if (storage === 'redis') {
      config.storage = {
        type: 'redis',
        redis_config: {
          addr: redisAddr as string,
          acl_user_config: { password_env_var: 'BENCH_REDIS_PASS' },
        },
      };
    }
    const auth = await mountAuthServer(host, config, {
      env: { ...TEST_ENV, BENCH_REDIS_PASS: 'bench-password' },
      tokenRateLimit: { perSecond: 1e6, burst: 1e6 },
    });
    const session = await registerClient(host);
    const chains: Tokens[] = [];
    for (let i = 0; i < CHAINS; i++) chains.push(await authorize(session, `user${i}`));

    process.stderr.write(`authserver bench (${storage}): token endpoint...\n`);
    const tokenLatencies: number[] = [];
    const t0 = performance.now();
    await Promise.all(
      chains.map(async (start) => {
        let cur = start;
        for (let i = 0; i < REFRESHES_PER_CHAIN; i++) {
          const s = performance.now();
          cur = await refresh(session, cur.refresh_token);
          tokenLatencies.push(performance.now() - s);
        }
      }),
    );
    const tokenEndpoint = summary(tokenLatencies, performance.now() - t0);

    process.stderr.write(`authserver bench (${storage}): validation...\n`);
    const fresh = await authorize(session, 'validator');
    const verifyLatencies: number[] = [];
    let next = 0;
    const t1 = performance.now();
    await Promise.all(
      Array.from({ length: VERIFY_CONCURRENCY }, async () => {
        while (next < VERIFICATIONS) {
          next++;
          const s = performance.now();
          await auth.verifyAccessToken(fresh.access_token, host.resource);
          verifyLatencies.push(performance.now() - s);
        }
      }),
    );
    const validation = summary(verifyLatencies, performance.now() - t1);
    return { token_endpoint_refresh: tokenEndpoint, token_validation: validation };
  } finally {
    for (const fn of cleanups.reverse()) await fn();
  }
}

async function main() {
  const result: Record<string, unknown> = {
    setup: {
      node: process.version,
      chains: CHAINS,
      refreshes_per_chain: REFRESHES_PER_CHAIN,
      verifications: VERIFICATIONS,
      verify_concurrency: VERIFY_CONCURRENCY,
      signing: 'ES256 (ephemeral key)',
    },
  };
  result['memory'] = await runMode('memory');
  if (redisAvailable()) {
    const redis = await startRedis(['--requirepass', 'bench-password']);
    try {
      result['redis_standalone'] = await runMode('redis', redis.addr);
    } finally {
      await redis.stop();
    }
  } else {
    result['redis_standalone'] = { skipped: `redis-server not installed (${REDIS_HINT})` };
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();
