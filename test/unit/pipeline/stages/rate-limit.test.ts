/**
 * The `ratelimit` stage (ToolHive's rate-limit middleware): parameters from the run configuration
 * and from `middleware_configs`, static checks without a connection, and on the wire: only
 * `tools/call` is counted, a limited call gets 429 with `Retry-After` and the JSON-RPC error
 * code 429, the caller's `sub` (verified, or the local user's) picks the per-user bucket.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { localUserIdentity } from '../../../../src/dataplane/pipeline/identity.js';
import { rateLimitStage } from '../../../../src/dataplane/pipeline/stages/rate-limit.js';
import type { Stage } from '../../../../src/dataplane/pipeline/types.js';
import { newRequestContext } from '../../../../src/dataplane/proxy/index.js';
import { isSkepError, silentLogger } from '../../../../src/shared/index.js';
import { parseRunConfig } from '../../../../src/workloads/index.js';

const runConfig = parseRunConfig({ name: 'github', image: 'npx://x' });
const deps = { config: runConfig, logger: silentLogger, secretLookup: async () => undefined };

function call(body: unknown, claims?: Record<string, unknown>) {
  const { ctx } = newRequestContext({
    method: 'POST',
    path: '/mcp',
    body: { json: body },
    serverName: 'github',
    backendTransport: 'stdio',
  });
  if (claims !== undefined) ctx.identity = { claims, subject: String(claims['sub']) };
  return ctx;
}

const toolsCall = (id: number | string | undefined, name = 'echo') => ({
  jsonrpc: '2.0',
  ...(id === undefined ? {} : { id }),
  method: 'tools/call',
  params: { name, arguments: { message: 'hi' } },
});

async function stageWith(config: unknown): Promise<Stage> {
  const stage = await rateLimitStage.create({ server_name: 'github', config }, deps);
  assert.ok(stage !== undefined);
  return stage;
}

test('fromRunConfig: the reference parameters {namespace, server_name, config, redis_addr?, redis_db?}', () => {
  const rl = { shared: { maxTokens: 10, refillPeriod: '1m0s' } };
  assert.equal(rateLimitStage.type, 'ratelimit');
  assert.equal(rateLimitStage.fromRunConfig?.(runConfig), undefined);
  assert.equal(rateLimitStage.fromRunConfig?.({ ...runConfig, rate_limit_config: {} }), undefined);
  assert.deepEqual(rateLimitStage.fromRunConfig?.({ ...runConfig, rate_limit_config: rl }), {
    namespace: '',
    server_name: 'github',
    config: rl,
  });
  assert.deepEqual(
    rateLimitStage.fromRunConfig?.({
      ...runConfig,
      rate_limit_config: rl,
      rate_limit_namespace: 'team-a',
      scaling_config: { session_redis: { address: 'redis:6379', db: 3, key_prefix: 'thv:proxy:session:' } },
    }),
    { namespace: 'team-a', server_name: 'github', config: rl, redis_addr: 'redis:6379', redis_db: 3 },
  );
});

test('check: static validation naming the field, without connecting to Redis', async () => {
  const rl = { shared: { maxTokens: 10, refillPeriod: '1m0s' } };
  const bad = (parameters: unknown, pattern: RegExp) =>
    assert.throws(
      () => rateLimitStage.check?.(parameters, runConfig),
      (err: unknown) => isSkepError(err) && err.code === 'invalid_config' && pattern.test(err.message),
      String(pattern),
    );
  // An address nobody listens on passes: check never connects.
  assert.equal(
    rateLimitStage.check?.({ config: rl, redis_addr: '127.0.0.1:1', redis_db: 0 }, runConfig),
    undefined,
  );
  bad({ config: { shared: { maxTokens: 0, refillPeriod: '1m' } } }, /rate_limit_config\.shared\.maxTokens/);
  bad({}, /ratelimit parameters\.config is required/);
  bad({ config: rl, redis: 'x' }, /unknown key\(s\) redis/);
  bad(
    { config: rl, redis_addr: 'redis' },
    /scaling_config\.session_redis\.address .*"redis" must be host:port/,
  );
  bad({ config: rl, redis_addr: 'redis:6379', redis_db: -1 }, /session_redis\.db .* integer ≥ 0/);
  bad('ratelimit', /parameters of 'ratelimit' must be an object/);
});

test('a limited tools/call: HTTP 429, Retry-After, JSON-RPC error 429 with retryAfterSeconds', async () => {
  const stage = await stageWith({ shared: { maxTokens: 2, refillPeriod: '5s' } });
  assert.equal(await stage.handle(call(toolsCall(1))), undefined);
  assert.equal(await stage.handle(call(toolsCall(2))), undefined);
  const limited = await stage.handle(call(toolsCall('three')));
  assert.deepEqual(limited, {
    status: 429,
    headers: { 'Content-Type': 'application/json', 'Retry-After': '3' },
    body: {
      jsonrpc: '2.0',
      id: 'three',
      error: { code: 429, message: 'Rate limit exceeded', data: { retryAfterSeconds: 3 } },
    },
  });
  // A notification has no id, and the error carries none.
  const notification = await stage.handle(call(toolsCall(undefined)));
  assert.equal(notification?.status, 429);
  assert.equal('id' in (notification?.body as object), false);
  await stage.close?.();
  await stage.close?.();
});

test('only tools/call is counted: other methods, GETs and client responses pass', async () => {
  const stage = await stageWith({ shared: { maxTokens: 1, refillPeriod: '1h' } });
  for (let i = 0; i < 5; i++) {
    assert.equal(await stage.handle(call({ jsonrpc: '2.0', id: i, method: 'tools/list' })), undefined);
    assert.equal(
      await stage.handle(call({ jsonrpc: '2.0', id: i, method: 'prompts/get', params: { name: 'p' } })),
      undefined,
    );
    assert.equal(await stage.handle(call({ jsonrpc: '2.0', id: i, result: {} })), undefined);
  }
  const get = newRequestContext({
    method: 'GET',
    path: '/mcp',
    serverName: 'github',
    backendTransport: 'stdio',
  });
  assert.equal(await stage.handle(get.ctx), undefined);
  assert.equal(await stage.handle(call(toolsCall(1))), undefined, 'the one token is still there');
  assert.equal((await stage.handle(call(toolsCall(2))))?.status, 429);
});

test('per-user buckets by the verified sub; without authentication everyone is the local user', async () => {
  const stage = await stageWith({
    perUser: { maxTokens: 1, refillPeriod: '1h' },
    tools: [{ name: 'search', shared: { maxTokens: 5, refillPeriod: '1h' } }],
  });
  assert.equal(await stage.handle(call(toolsCall(1), { sub: 'alice' })), undefined);
  assert.equal((await stage.handle(call(toolsCall(2), { sub: 'alice' })))?.status, 429);
  assert.equal(await stage.handle(call(toolsCall(3), { sub: 'bob' })), undefined, 'bob has his own bucket');
  // No identity: the local user's sub, one shared "user" for every local caller.
  const local = localUserIdentity().subject as string;
  assert.equal(await stage.handle(call(toolsCall(4))), undefined);
  assert.equal((await stage.handle(call(toolsCall(5))))?.status, 429);
  assert.equal(
    (await stage.handle(call(toolsCall(6), { sub: local })))?.status,
    429,
    'the same bucket as the local user',
  );
  // A token without a sub: no per-user bucket applies; the tool's shared one still does.
  for (let i = 0; i < 5; i++)
    assert.equal(await stage.handle(call(toolsCall(10 + i, 'search'), { iss: 'x' })), undefined);
  const refused = await stage.handle(call(toolsCall(20, 'search'), { iss: 'x' }));
  assert.equal(refused?.status, 429);
  assert.equal(refused?.headers?.['Retry-After'], '720');
});
