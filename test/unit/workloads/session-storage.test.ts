/**
 * As in ToolHive: where a workload's proxy keeps its sessions, read from the run
 * configuration — only for a streamable-HTTP server; `session_ttl` (Go duration, default 2 h);
 * `scaling_config.session_redis` address, db and key prefix, each bad value a 400 naming the
 * field; and the password, which only the environment holds, never reaches a server.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inheritable } from '../../../src/dataplane/runtime/server-env.js';
import { isSkepError, SESSION_REDIS_PASSWORD_ENV, sessionRedisPassword } from '../../../src/shared/index.js';
import { parseRunConfig, sessionStorageOf } from '../../../src/workloads/index.js';

const http = (fields: Record<string, unknown> = {}) =>
  parseRunConfig({
    name: 'w',
    image: 'cmd:///bin/true',
    transport: 'streamable-http',
    target_port: 9,
    ...fields,
  });

function invalidConfig(fields: Record<string, unknown>, message: RegExp): void {
  assert.throws(
    () => sessionStorageOf(http(fields)),
    (err) =>
      isSkepError(err) && err.code === 'invalid_config' && err.status === 400 && message.test(err.message),
    JSON.stringify(fields),
  );
}

test('a streamable-HTTP server keeps sessions in memory for 2 h by default; stdio and legacy SSE servers none', () => {
  assert.deepEqual(sessionStorageOf(http()), { ttlMs: 2 * 3600_000 });
  assert.deepEqual(
    sessionStorageOf(
      parseRunConfig({ name: 'w', remote_url: 'https://mcp.example.com/mcp', transport: 'streamable-http' }),
    ),
    { ttlMs: 2 * 3600_000 },
  );
  assert.equal(sessionStorageOf(parseRunConfig({ name: 'w', image: 'cmd:///bin/true' })), undefined);
  assert.equal(
    sessionStorageOf(
      parseRunConfig({ name: 'w', remote_url: 'https://mcp.example.com/sse', transport: 'sse' }),
    ),
    undefined,
  );
});

test('session_ttl is a Go duration; session_redis gives address, db and the default key prefix', () => {
  assert.deepEqual(
    sessionStorageOf(
      http({ session_ttl: '1h30m', scaling_config: { session_redis: { address: 'redis:6379', db: 3 } } }),
    ),
    { ttlMs: 90 * 60_000, redis: { address: 'redis:6379', db: 3, keyPrefix: 'thv:proxy:session:' } },
  );
  assert.deepEqual(
    sessionStorageOf(
      http({ scaling_config: { session_redis: { address: '[::1]:6380', key_prefix: 'team-a:s:' } } }),
    )?.redis,
    { address: '[::1]:6380', db: 0, keyPrefix: 'team-a:s:' },
  );
});

test('bad values are 400s naming the field and saying what to write', () => {
  invalidConfig(
    { session_ttl: 'two hours' },
    /^session_ttl "two hours" is not a duration; write e\.g\. "2h"/,
  );
  invalidConfig({ session_ttl: '500ms' }, /^session_ttl must be at least 1s/);
  invalidConfig(
    { scaling_config: { session_redis: { address: 'redis:6379', key_prefix: 'sessions' } } },
    /^scaling_config\.session_redis\.key_prefix "sessions" must end with ':'/,
  );
  invalidConfig(
    { scaling_config: { session_redis: { address: 'redis' } } },
    /^scaling_config\.session_redis\.address "redis" must be host:port/,
  );
  invalidConfig(
    { scaling_config: { session_redis: { address: 'redis:6379', db: -1 } } },
    /^scaling_config\.session_redis\.db must be an integer ≥ 0/,
  );
  // The prefix is checked for a stdio server too (its rate limiter may use the Redis).
  assert.throws(
    () =>
      sessionStorageOf(
        parseRunConfig({
          name: 'w',
          image: 'cmd:///bin/true',
          scaling_config: { session_redis: { key_prefix: 'x' } },
        }),
      ),
    /key_prefix "x" must end with ':'/,
  );
});

test('the password comes from the environment only, and a server never inherits it', () => {
  assert.deepEqual(
    [...SESSION_REDIS_PASSWORD_ENV],
    ['SKEP_SESSION_REDIS_PASSWORD', 'THV_SESSION_REDIS_PASSWORD'],
  );
  assert.equal(sessionRedisPassword({}), undefined);
  assert.deepEqual(sessionRedisPassword({ THV_SESSION_REDIS_PASSWORD: 'p' }), {
    password: 'p',
    from: 'THV_SESSION_REDIS_PASSWORD',
  });
  assert.deepEqual(
    sessionRedisPassword({ THV_SESSION_REDIS_PASSWORD: 'p', SKEP_SESSION_REDIS_PASSWORD: 's' }),
    {
      password: 's',
      from: 'SKEP_SESSION_REDIS_PASSWORD',
    },
  );
  for (const name of SESSION_REDIS_PASSWORD_ENV) assert.equal(inheritable(name, 'linux'), false, name);
  // A password in the run configuration is refused, never stored; so are unknown keys.
  invalidConfig(
    { scaling_config: { session_redis: { address: 'redis:6379', password: 'hunter2' } } },
    /^scaling_config\.session_redis\.password: a password is never part of the configuration; remove it and set SKEP_SESSION_REDIS_PASSWORD or THV_SESSION_REDIS_PASSWORD/,
  );
  invalidConfig(
    { scaling_config: { session_redis: { address: 'redis:6379', tls: true } } },
    /^scaling_config\.session_redis: unknown key tls \(known: address, db, key_prefix\)/,
  );
});
