/**
 * Sessions in Redis (as ToolHive's proxy keeps them) with real parts: a real
 * streamable-HTTP MCP server (the conformance fixture in `http` mode, its sessions in its
 * memory), two proxies of one workload built the way the runner builds them (the run
 * configuration → `sessionStorageOf` → `openSessionStore` → the upstream's session store),
 * real Redis (standalone, a password, a 3-master Cluster), the official MCP SDK client.
 *
 * A session initialized through proxy A continues through proxy B; after the server restarts
 * (it lost every session) a call through B still works: B replays the stored initialize
 * request and sends the server's new id while the client keeps its own, and A then takes that
 * re-initialization over. The keys are the reference's (`<key_prefix><id>`, the JSON record,
 * the TTL from `session_ttl`, restarted by a read). Redis stopped mid-way: nothing is refused.
 */
import assert from 'node:assert/strict';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { type TestContext, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  openSessionStore,
  type RunningProxy,
  type SessionStore,
} from '../../../src/dataplane/proxy/index.js';
import { isSkepError, type Logger } from '../../../src/shared/index.js';
import { parseRunConfig, sessionStorageOf } from '../../../src/workloads/index.js';
import { freePort } from '../../helpers/net.js';
import { cli, REDIS_HINT, redisAvailable, startRedis, startRedisCluster } from '../../helpers/redis.js';
import { requireService } from '../../helpers/services.js';
import { exited, FIXTURE_SERVER, loggedLine, printed, proxyFor, spawnServer } from './helpers.js';

/** The conformance fixture as a streamable-HTTP server on a fixed port, restartable there. */
class HttpServer {
  #child: ChildProcessWithoutNullStreams | undefined;
  readonly #t: TestContext;
  readonly port: number;

  private constructor(t: TestContext, port: number) {
    this.#t = t;
    this.port = port;
  }

  static async start(t: TestContext): Promise<HttpServer> {
    const server = new HttpServer(t, await freePort());
    await server.#spawn();
    return server;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/mcp`;
  }

  async #spawn(): Promise<void> {
    this.#child = spawnServer(this.#t, ['--import', 'tsx', FIXTURE_SERVER, 'http', String(this.port)]);
    await printed(this.#child, /listening/);
  }

  /** Kills the server (its sessions die with it) and starts a fresh one on the same port. */
  async restart(): Promise<void> {
    const child = this.#child as ChildProcessWithoutNullStreams;
    child.kill('SIGKILL');
    await exited(child);
    await this.#spawn();
  }
}

/** A proxy of the workload `fields` describe, in front of `url`, as the runner builds it. */
async function workloadProxy(
  t: TestContext,
  url: string,
  fields: Record<string, unknown>,
  logger?: Logger,
): Promise<{ proxy: RunningProxy; store: SessionStore }> {
  const runConfig = parseRunConfig({
    name: 'search',
    remote_url: url,
    transport: 'streamable-http',
    ...fields,
  });
  const storage = sessionStorageOf(runConfig);
  assert.ok(storage !== undefined, 'a streamable-HTTP server keeps sessions');
  const store = await openSessionStore(storage);
  t.after(() => store.close());
  const proxy = await proxyFor(t, undefined, {
    upstream: { kind: 'http', url, transport: 'streamable-http', sessions: store },
    serverName: 'search',
    ...(logger === undefined ? {} : { logger }),
  });
  return { proxy, store };
}

/** An SDK client through `proxy`: initializing, or continuing `session` (no initialize). */
async function sdkClient(
  t: TestContext,
  proxy: RunningProxy,
  session?: { id: string; protocolVersion: string },
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(
    new URL(`${proxy.url}/mcp`),
    session === undefined ? undefined : { sessionId: session.id },
  );
  const client = new Client({ name: 'shared-sessions-test', version: '1.0.0' });
  await client.connect(transport);
  if (session !== undefined) transport.setProtocolVersion(session.protocolVersion);
  t.after(() => client.close());
  return { client, transport };
}

async function simpleText(client: Client): Promise<string> {
  const result = (await client.callTool({ name: 'test_simple_text', arguments: {} })) as {
    content: { text?: string }[];
  };
  return result.content.map((c) => c.text ?? '').join('');
}

const SIMPLE = 'This is a simple text response for testing.';

interface Record_ {
  id: string;
  type: string;
  created_at: string;
  updated_at: string;
  metadata: Record<string, string>;
}

test(
  'standalone Redis: initialized through A, continued through B, survives a server restart (re-init, backend_sid); the reference keys and sliding TTL',
  { timeout: 180_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const redis = await startRedis();
    t.after(() => redis.stop());
    const server = await HttpServer.start(t);
    const fields = {
      session_ttl: '30m',
      scaling_config: { session_redis: { address: redis.addr, db: 3, key_prefix: 'team-a:sessions:' } },
    };
    const a = await workloadProxy(t, server.url, fields);
    const b = await workloadProxy(t, server.url, fields);
    assert.equal(a.store.kind, 'redis');
    const redisCli = (...args: string[]) => cli(redis.port, undefined, '-n', '3', ...args).trim();

    // Initialized through A.
    const first = await sdkClient(t, a.proxy);
    assert.equal(await simpleText(first.client), SIMPLE);
    const sid = first.transport.sessionId as string;
    const session = { id: sid, protocolVersion: first.transport.protocolVersion as string };
    const key = `team-a:sessions:${sid}`;
    const stored = JSON.parse(redisCli('GET', key)) as Record_;
    assert.deepEqual(Object.keys(stored), ['id', 'type', 'created_at', 'updated_at', 'metadata']);
    assert.equal(stored.id, sid);
    assert.equal(stored.type, 'mcp');
    assert.equal(stored.metadata['backend_url'], server.url);
    assert.equal(stored.metadata['backend_sid'], undefined);
    const initBody = JSON.parse(stored.metadata['init_body'] as string) as { method: string; params: object };
    assert.equal(initBody.method, 'initialize');
    assert.ok('clientInfo' in initBody.params);
    const ttl = Number(redisCli('TTL', key));
    assert.ok(ttl > 1790 && ttl <= 1800, `TTL from session_ttl 30m: ${ttl}`);
    await first.client.close();

    // Continued through B; B reads the record once (GETEX), which restarts its TTL.
    assert.equal(redisCli('EXPIRE', key, '100'), '1');
    assert.ok(Number(redisCli('TTL', key)) <= 100);
    const second = await sdkClient(t, b.proxy, session);
    assert.equal(await simpleText(second.client), SIMPLE);
    const refreshed = Number(redisCli('TTL', key));
    assert.ok(refreshed > 1790, `a read restarts the TTL: ${refreshed}`);

    // The server restarts and loses every session: B re-initializes in the client's place.
    await server.restart();
    assert.equal(await simpleText(second.client), SIMPLE);
    const { tools } = await second.client.listTools();
    assert.ok(tools.some((tool) => tool.name === 'test_simple_text'));
    assert.equal(second.transport.sessionId, sid, 'the client keeps its session id');
    const renewed = JSON.parse(redisCli('GET', key)) as Record_;
    const backendSid = renewed.metadata['backend_sid'] as string;
    assert.ok(backendSid !== undefined && backendSid !== sid, 'the server’s new id is recorded');
    assert.equal(renewed.metadata['backend_url'], server.url);
    assert.equal(renewed.metadata['init_body'], stored.metadata['init_body']);
    assert.equal(renewed.created_at, stored.created_at);
    assert.ok(Date.parse(renewed.updated_at) >= Date.parse(stored.updated_at));

    // Back through A, which had cached the session without a backend id: it takes B's
    // re-initialization over instead of making another.
    const third = await sdkClient(t, a.proxy, session);
    assert.equal(await simpleText(third.client), SIMPLE);
    assert.equal((JSON.parse(redisCli('GET', key)) as Record_).metadata['backend_sid'], backendSid);

    // DELETE through B ends the server's session (under its new id) and the record.
    await second.transport.terminateSession();
    assert.equal(redisCli('EXISTS', key), '0');
  },
);

test(
  'Redis stopped mid-way: cached sessions go on, new ones are served (WARN), unseen ones pass through unchanged',
  { timeout: 180_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const redis = await startRedis();
    t.after(() => redis.stop());
    const server = await HttpServer.start(t);
    const fields = { scaling_config: { session_redis: { address: redis.addr } } };
    const warned = loggedLine('session store: cannot store a new session');
    const a = await workloadProxy(t, server.url, fields, warned.logger);
    const b = await workloadProxy(t, server.url, fields);
    const first = await sdkClient(t, a.proxy);
    assert.equal(await simpleText(first.client), SIMPLE);
    const session = { id: first.transport.sessionId as string, protocolVersion: '2025-11-25' };

    await redis.stop();
    assert.equal(await simpleText(first.client), SIMPLE, 'a session A has seen');
    const fresh = await sdkClient(t, a.proxy);
    assert.equal(await simpleText(fresh.client), SIMPLE, 'a new session');
    await warned.logged;
    const through = await sdkClient(t, b.proxy, session);
    assert.equal(await simpleText(through.client), SIMPLE, 'a session B has not seen: passed through');
  },
);

test('a Redis password only from the environment: missing or wrong is a start error that says so', async (t) => {
  if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
  const password = 'session-redis-password-7';
  const redis = await startRedis(['--requirepass', password]);
  t.after(() => redis.stop());
  const options = { ttlMs: 60_000, redis: { address: redis.addr, db: 0, keyPrefix: 'thv:proxy:session:' } };
  await assert.rejects(
    openSessionStore(options, {}),
    (err) =>
      isSkepError(err) &&
      err.code === 'unauthorized' &&
      /^session storage: Redis at 127\.0\.0\.1:\d+ \(scaling_config\.session_redis\.address\) requires a password: set SKEP_SESSION_REDIS_PASSWORD or THV_SESSION_REDIS_PASSWORD in Skep's environment$/.test(
        err.message,
      ),
  );
  await assert.rejects(
    openSessionStore(options, { THV_SESSION_REDIS_PASSWORD: 'not-the-password' }),
    (err) =>
      isSkepError(err) &&
      err.code === 'unauthorized' &&
      /refused the password from THV_SESSION_REDIS_PASSWORD$/.test(err.message) &&
      !err.message.includes('not-the-password'),
  );
  const store = await openSessionStore(options, { THV_SESSION_REDIS_PASSWORD: password });
  t.after(() => store.close());
  const record = { id: 'p1', type: 'mcp' as const, created_at: 't', updated_at: 't', metadata: { a: 'b' } };
  await store.save(record);
  assert.deepEqual(await store.load('p1'), record);
  assert.match(cli(redis.port, password, 'TTL', 'thv:proxy:session:p1'), /^60\s*$/);
  // Unreachable: a start error naming the field.
  await assert.rejects(
    openSessionStore({ ttlMs: 60_000, redis: { address: '127.0.0.1:1', db: 0, keyPrefix: 'x:' } }, {}),
    (err) =>
      isSkepError(err) &&
      err.code === 'unavailable' &&
      /^session storage: cannot reach Redis at 127\.0\.0\.1:1 \(scaling_config\.session_redis\.address\)/.test(
        err.message,
      ),
  );
});

test(
  'Redis Cluster (3 masters, password from the environment): a session continues through the other proxy',
  { timeout: 180_000 },
  async (t) => {
    if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
    const password = 'session-cluster-password-9';
    const cluster = await startRedisCluster(password);
    t.after(() => cluster.stop());
    const before = process.env['THV_SESSION_REDIS_PASSWORD'];
    process.env['THV_SESSION_REDIS_PASSWORD'] = password;
    t.after(() => {
      if (before === undefined) delete process.env['THV_SESSION_REDIS_PASSWORD'];
      else process.env['THV_SESSION_REDIS_PASSWORD'] = before;
    });
    const server = await HttpServer.start(t);
    const fields = { scaling_config: { session_redis: { address: cluster.addr } } };
    const a = await workloadProxy(t, server.url, fields);
    const b = await workloadProxy(t, server.url, fields);
    assert.equal((a.store as SessionStore & { mode?: string }).mode, 'cluster');
    const first = await sdkClient(t, a.proxy);
    assert.equal(await simpleText(first.client), SIMPLE);
    const sid = first.transport.sessionId as string;
    const key = `thv:proxy:session:${sid}`;
    // The key lives on whichever master owns its slot; -c follows the redirection.
    const node = (cluster.nodes[0] as { port: number }).port;
    const stored = JSON.parse(cli(node, password, '-c', 'GET', key)) as Record_;
    assert.equal(stored.id, sid);
    assert.equal(stored.metadata['backend_url'], server.url);
    assert.ok(Number(cli(node, password, '-c', 'TTL', key)) > 7000, 'the default 2 h TTL');
    await first.client.close();

    await server.restart();
    const second = await sdkClient(t, b.proxy, {
      id: sid,
      protocolVersion: first.transport.protocolVersion as string,
    });
    assert.equal(await simpleText(second.client), SIMPLE);
    const renewed = JSON.parse(cli(node, password, '-c', 'GET', key)) as Record_;
    assert.ok(renewed.metadata['backend_sid'] !== undefined && renewed.metadata['backend_sid'] !== sid);

    // A Cluster has only database 0.
    await assert.rejects(
      openSessionStore({ ttlMs: 60_000, redis: { address: cluster.addr, db: 2, keyPrefix: 'x:' } }),
      (err) =>
        isSkepError(err) &&
        err.code === 'invalid_config' &&
        /^scaling_config\.session_redis\.db must be 0: .* is a Redis Cluster node/.test(err.message),
    );
  },
);
