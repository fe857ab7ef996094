/**
 * The embedded authorization server keeps each session's upstream IdP tokens in Redis, where
 * other readers of the instance (an operator, a backup, another tenant) can look. Against a
 * real redis-server and a real upstream (oidc-provider): the stored record holds none of the
 * upstream access, refresh or ID token strings, only a sealed blob; the flow still works; a
 * record that was tampered with, swapped to another session's key, or written in clear (as
 * an older version did) is treated as absent (the resource answers 401: log in again), and
 * putting the original back makes it work again.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { REDIS_HINT, redisAvailable, startRedis } from '../../helpers/redis.js';
import { requireService } from '../../helpers/services.js';
import {
  authorize,
  baseConfig,
  callResource,
  mountAuthServer,
  refresh,
  registerClient,
  startHost,
  startUpstream,
} from './harness.js';

const PASSWORD = 'redis-sealed-test-password-0123';

test('upstream tokens are sealed at rest in Redis (AES-256-GCM, HKDF from the HMAC secret); a record that does not open is absent', async (t) => {
  if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
  const redis = await startRedis(['--requirepass', PASSWORD]);
  t.after(() => redis.stop());
  const reader = new Redis({ host: '127.0.0.1', port: redis.port, password: PASSWORD, lazyConnect: true });
  await reader.connect();
  t.after(() => reader.disconnect());

  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  // The upstream's opaque tokens: oidc-provider's value is the token's jti.
  const issued: string[] = [];
  for (const event of ['access_token.saved', 'refresh_token.saved'])
    upstream.provider.on(event, (token: { jti: string }) => void issued.push(token.jti));
  // The token endpoint's answer (the ID token is a JWT, not stored by the provider).
  upstream.provider.on('grant.success', (ctx: { body?: { id_token?: string } }) => {
    const idToken = ctx.body?.id_token;
    if (idToken !== undefined) issued.push(idToken);
  });

  const dir = mkdtempSync(join(tmpdir(), 'skep-as-sealed-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const hmacFile = join(dir, 'hmac-0');
  writeFileSync(hmacFile, randomBytes(32).toString('hex'));
  const config = {
    ...baseConfig(host, upstream),
    hmac_secret_files: [hmacFile],
    storage: {
      type: 'redis' as const,
      redis_config: {
        addr: redis.addr,
        key_prefix: 'skep:auth:{sealed}:',
        acl_user_config: { password_env_var: 'REDIS_PASS' },
        dial_timeout: '2s',
      },
    },
  };
  const env = {
    env: {
      ...process.env,
      SKEP_TEST_UPSTREAM_SECRET: 'upstream-secret-for-tests-only-0123456789',
      REDIS_PASS: PASSWORD,
    },
  };
  await mountAuthServer(host, config, env);

  // Two users, two sessions; the flow works end to end (the resource gets the upstream token).
  const session = await registerClient(host);
  const alice = await authorize(session, 'alice');
  const bob = await authorize(session, 'bob');
  const aliceCall = await callResource(host, alice.access_token);
  assert.equal(aliceCall.status, 200, aliceCall.body);
  const aliceUpstream = (JSON.parse(aliceCall.body) as { upstream: string }).upstream;
  assert.ok(issued.includes(aliceUpstream), 'the resource got the upstream access token');
  assert.equal((await callResource(host, bob.access_token)).status, 200);
  const refreshed = await refresh(session, alice.refresh_token);
  assert.equal((await callResource(host, refreshed.access_token)).status, 200);

  const keys = (await reader.keys('skep:auth:{sealed}:upstream:*'))
    .filter((k) => !k.includes(':idx:'))
    .sort();
  assert.equal(keys.length, 2, keys.join(', '));
  const raw = await Promise.all(keys.map(async (k) => (await reader.get(k)) as string));
  assert.ok(issued.length >= 4, `upstream tokens seen: ${issued.length}`);
  for (const value of raw) {
    assert.match(value, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    for (const token of issued) assert.ok(!value.includes(token), 'an upstream token is readable in Redis');
    for (const word of ['access_token', 'refresh_token', 'id_token', 'alice', 'bob'])
      assert.ok(!value.includes(word), `${word} is readable in Redis`);
  }
  // Whatever the order of the keys, setting one of them must cost exactly one session its
  // upstream token, and never hand out what was planted.
  const [keyA, keyB] = keys as [string, string];
  const [valueA, valueB] = raw as [string, string];
  const parts = valueA.split('.');
  const ct = parts[2] as string;
  parts[2] = `${ct[0] === 'A' ? 'B' : 'A'}${ct.slice(1)}`;
  const planted = JSON.stringify({
    provider_id: 'idp',
    access_token: 'planted-token',
    session_expires_at: 4102444800,
  });
  for (const [bad, what] of [
    [parts.join('.'), 'one ciphertext character changed'],
    [valueB, "the other session's record (bound to its own key)"],
    [planted, 'a record in clear, as an older version wrote'],
  ] as const) {
    await reader.set(keyA, bad, 'KEEPTTL');
    const calls = [
      await callResource(host, refreshed.access_token),
      await callResource(host, bob.access_token),
    ];
    assert.deepEqual(
      calls.map((c) => c.status).sort(),
      [200, 401],
      `${what}: ${calls.map((c) => c.body).join(' / ')}`,
    );
    assert.ok(
      calls.every((c) => !c.body.includes('planted-token')),
      what,
    );
  }
  await reader.set(keyA, valueA, 'KEEPTTL');
  for (const token of [refreshed.access_token, bob.access_token])
    assert.equal((await callResource(host, token)).status, 200, 'the original record opens again');
  assert.notEqual(keyA, keyB);
});
