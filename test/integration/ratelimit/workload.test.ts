/**
 * Rate limits through real workloads: run configurations imported like
 * `skep run --from-config`, the runner run in this process (pipeline from the run
 * configuration, the proxy, server-everything as a stdio child), the official MCP SDK
 * client. In memory (`rate_limit_config` alone): the call after `maxTokens` gets the
 * reference's 429 and JSON-RPC error, over streamable HTTP and legacy SSE. With
 * `scaling_config.session_redis`: two workloads — one from the typed fields, one from an
 * explicit `middleware_configs` entry naming the same server — spend one budget in Redis.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApiContext } from '../../../src/control/app/index.js';
import type { WorkloadManager } from '../../../src/workloads/index.js';
import { REDIS_HINT, redisAvailable, startRedis } from '../../helpers/redis.js';
import { requireService } from '../../helpers/services.js';
import {
  everythingBody,
  inProcessManager,
  runInProcess,
  waitFor,
  workloadEndpoint,
} from '../workloads/helpers.js';
import { assertLimited, echo, sdkClient } from './helpers.js';

/** Runners started by one test; `stopAll` ends them before the home's store closes. */
class Runners {
  readonly #running: { name: string; controller: AbortController; done: Promise<number> }[] = [];
  readonly #ctx: ApiContext;
  readonly #manager: WorkloadManager;

  constructor(ctx: ApiContext, manager: WorkloadManager) {
    this.#ctx = ctx;
    this.#manager = manager;
  }

  /** Imports `fields` over server-everything as `name`, runs its runner here; resolves its working URL. */
  async start(name: string, fields: Record<string, unknown>): Promise<string> {
    const manager = this.#manager;
    if (manager.rows.get('template') === undefined) await manager.create(everythingBody('template'));
    await manager.createFromConfig({ ...manager.exportConfig('template'), ...fields }, { name });
    const controller = new AbortController();
    this.#running.push({ name, controller, done: runInProcess(this.#ctx, name, controller.signal) });
    await waitFor(`${name} to be running`, () =>
      manager.rows.get(name)?.status === 'running' ? true : undefined,
    );
    return workloadEndpoint(manager, name);
  }

  async stopAll(): Promise<void> {
    for (const r of this.#running) r.controller.abort();
    for (const r of this.#running) assert.equal(await r.done, 0, `${r.name}: runner exit code`);
  }
}

test(
  'in memory: the SDK client gets 429 and the JSON-RPC error after maxTokens calls',
  { timeout: 300_000 },
  async (t) => {
    const { ctx, manager } = inProcessManager(t);
    const runners = new Runners(ctx, manager);
    try {
      const url = await runners.start('limited', {
        rate_limit_config: { shared: { maxTokens: 3, refillPeriod: '1m0s' } },
      });
      const streamable = await sdkClient(t, url);
      const sse = await sdkClient(t, url, true);
      // tools/list is not counted.
      for (let i = 0; i < 5; i++) await streamable.listTools();
      assert.deepEqual(await echo(streamable, 'one'), { ok: true, text: 'Echo: one' });
      assert.deepEqual(await echo(sse, 'two'), { ok: true, text: 'Echo: two' });
      assert.deepEqual(await echo(streamable, 'three'), { ok: true, text: 'Echo: three' });
      // 3 tokens per 60 s: ceil(60 / 3) = 20 s.
      assertLimited(await echo(streamable, 'four'), 20);
      // Over legacy SSE the POST is refused the same way.
      const overSse = await echo(sse, 'five');
      assert.equal(overSse.ok, false);
      assert.equal(overSse.ok === false && overSse.status, 429);
      // The session survives a refusal: other methods still work.
      assert.ok((await streamable.listTools()).tools.some((tool) => tool.name === 'echo'));
      await streamable.close();
      await sse.close();
    } finally {
      await runners.stopAll();
    }
  },
);

test(
  'scaling_config.session_redis: two workloads naming one server share its budget in Redis',
  { timeout: 300_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const redis = await startRedis();
    t.after(() => redis.stop());
    const { ctx, manager } = inProcessManager(t);
    const runners = new Runners(ctx, manager);
    try {
      const config = { perUser: { maxTokens: 4, refillPeriod: '2m' } };
      const typed = await runners.start('search', {
        rate_limit_config: config,
        rate_limit_namespace: 'team-a',
        scaling_config: { session_redis: { address: redis.addr, db: 1, key_prefix: 'thv:proxy:session:' } },
      });
      // The same server by an explicit middleware_configs entry with the reference's parameters.
      const explicit = await runners.start('search-replica', {
        middleware_configs: [
          {
            type: 'ratelimit',
            parameters: {
              namespace: 'team-a',
              server_name: 'search',
              config,
              redis_addr: redis.addr,
              redis_db: 1,
            },
          },
        ],
      });
      const a = await sdkClient(t, typed);
      const b = await sdkClient(t, explicit);
      const oks = [];
      for (let i = 0; i < 4; i++) oks.push((await echo(i % 2 === 0 ? a : b, `m${i}`)).ok);
      assert.deepEqual(oks, [true, true, true, true]);
      // The local user's bucket (4 per 120 s) is spent on both: ceil(120 / 4) = 30 s.
      assertLimited(await echo(a, 'm4'), 30);
      assertLimited(await echo(b, 'm5'), 30);
      await a.close();
      await b.close();
    } finally {
      await runners.stopAll();
    }
  },
);
