/**
 * The full flow with Redis storage, on real Redis processes started by the test:
 * standalone (ACL user + password from env vars, default user disabled), Sentinel (master,
 * replica, three sentinels; the master is failed over mid-test and every issued token and
 * refresh token must survive), a 3-master Cluster (hash-tagged keys keep the Lua
 * scripts in one slot), and a TLS-only server with its own CA.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import type { EmbeddedAuthServerConfig, RedisConfig } from '../../../src/authserver/index.js';
import {
  aclUserArgs,
  cli,
  makeTlsFiles,
  REDIS_HINT,
  redisAvailable,
  startRedis,
  startRedisCluster,
  startSentinelSetup,
  waitUntil,
} from '../../helpers/redis.js';
import { hasCommand, requireService } from '../../helpers/services.js';
import {
  authorize,
  baseConfig,
  callResource,
  CookieJar,
  type Host,
  mountAuthServer,
  refresh,
  registerClient,
  startHost,
  startUpstream,
  TEST_ENV,
  type Upstream,
} from './harness.js';

const PASSWORD = 'redis-test-password-0123456789';

function redisConfig(host: Host, upstream: Upstream, redis: RedisConfig): EmbeddedAuthServerConfig {
  return {
    ...baseConfig(host, upstream),
    token_lifespans: {
      access_token_lifespan: '30m',
      refresh_token_lifespan: '24h',
      auth_code_lifespan: '5m',
    },
    storage: { type: 'redis', redis_config: { auth_type: 'aclUser', ...redis } },
  };
}

const env = (extra: Record<string, string>) => ({ ...TEST_ENV, ...extra });

/**
 * A client's whole life on tokens kept in Redis: registration, authorization, a call to the
 * resource, a refresh, and the refreshed access token verified by the server.
 */
async function roundTrip(host: Host, auth: Awaited<ReturnType<typeof mountAuthServer>>) {
  const session = await registerClient(host);
  const tokens = await authorize(session);
  assert.equal((await callResource(host, tokens.access_token)).status, 200);
  const refreshed = await refresh(session, tokens.refresh_token);
  await auth.verifyAccessToken(refreshed.access_token, host.resource);
  return { session, tokens, refreshed };
}

test('Redis standalone with an ACL user: full flow, TTLs from the token lifespans, key prefix', async (t) => {
  if (!requireService(t, 'redis-server', redisAvailable(), REDIS_HINT)) return;
  const redis = await startRedis(aclUserArgs('skep', PASSWORD));
  t.after(() => redis.stop());
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  const dir = mkdtempSync(join(tmpdir(), 'skep-as-keys-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const keyFile = join(dir, 'key-0.pem');
  writeFileSync(
    keyFile,
    generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }),
  );
  const hmacFile = join(dir, 'hmac-0');
  writeFileSync(hmacFile, randomBytes(32).toString('hex'));
  const keyConfig = { signing_key_file: keyFile };
  const config = redisConfig(host, upstream, {
    addr: redis.addr,
    key_prefix: 'skep:auth:{ns1:wl1}:',
    acl_user_config: { username_env_var: 'REDIS_USER', password_env_var: 'REDIS_PASS' },
    dial_timeout: '2s',
    read_timeout: '2s',
    write_timeout: '2s',
  });
  const opts = { env: env({ REDIS_USER: 'skep', REDIS_PASS: PASSWORD }) };
  const auth = await mountAuthServer(
    host,
    { ...config, signing_key_config: keyConfig, hmac_secret_files: [hmacFile] },
    opts,
  );
  const session = await registerClient(host);
  const jar = new CookieJar();
  let consentPages = 0;
  const browser = { jar, onConsentPage: () => void consentPages++ };
  const tokens = await authorize(session, 'alice', browser);
  assert.equal(consentPages, 1);
  assert.equal(
    (decodeJwt(tokens.access_token).exp as number) - (decodeJwt(tokens.access_token).iat as number),
    1800,
  );
  assert.equal((await callResource(host, tokens.access_token)).status, 200);
  const refreshed = await refresh(session, tokens.refresh_token);
  await auth.verifyAccessToken(refreshed.access_token, host.resource);

  const keys = cli(redis.port, PASSWORD, '--user', 'skep', '--scan', '--pattern', '*').trim().split('\n');
  assert.ok(keys.length > 0 && keys.every((k) => k.startsWith('skep:auth:{ns1:wl1}:')), keys.join(','));
  const refreshKey = keys.find((k) => k.includes(':refresh:')) as string;
  const ttl = Number(cli(redis.port, PASSWORD, '--user', 'skep', 'TTL', refreshKey).trim());
  assert.ok(ttl > 23 * 3600 && ttl <= 24 * 3600, `refresh TTL ${ttl} follows refresh_token_lifespan 24h`);
  const clientKey = keys.find((k) => k.includes(':client:')) as string;
  assert.ok(Number(cli(redis.port, PASSWORD, '--user', 'skep', 'TTL', clientKey).trim()) > 29 * 24 * 3600);

  // A second server (another replica of the proxy, same key and HMAC files) on the same Redis
  // honours the tokens and clients the first one issued.
  await mountAuthServer(
    host,
    { ...config, signing_key_config: keyConfig, hmac_secret_files: [hmacFile] },
    opts,
  );
  assert.equal((await callResource(host, refreshed.access_token)).status, 200);
  const third = await refresh(session, refreshed.refresh_token);
  assert.equal((await callResource(host, third.access_token)).status, 200);
  // The approval and the browser it remembers are in Redis too: the other server skips the page.
  const again = await authorize(session, 'alice', browser);
  assert.equal(consentPages, 1, 'remembered approval read from Redis');
  assert.equal((await callResource(host, again.access_token)).status, 200);

  // A wrong password is reported as unavailable storage, not as a crash.
  await assert.rejects(
    mountAuthServer(
      host,
      redisConfig(host, upstream, {
        addr: redis.addr,
        acl_user_config: { username_env_var: 'REDIS_USER', password_env_var: 'REDIS_PASS' },
        dial_timeout: '1s',
      }),
      { env: env({ REDIS_USER: 'skep', REDIS_PASS: 'wrong' }) },
    ),
    /cannot connect to Redis/,
  );
});

test('Redis over TLS: the server certificate is verified against tls.ca_cert_file; an unknown CA is refused unless insecure_skip_verify', async (t) => {
  if (!requireService(t, 'redis-server and openssl', redisAvailable() && hasCommand('openssl'), REDIS_HINT))
    return;
  const dir = mkdtempSync(join(tmpdir(), 'skep-redis-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const files = makeTlsFiles(dir);
  const redis = await startRedis(['--requirepass', PASSWORD], undefined, files);
  t.after(() => redis.stop());
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  const base = {
    addr: redis.addr,
    acl_user_config: { password_env_var: 'REDIS_PASS' },
    dial_timeout: '2s',
  };
  const opts = { env: env({ REDIS_PASS: PASSWORD }) };

  const auth = await mountAuthServer(
    host,
    redisConfig(host, upstream, { ...base, tls: { ca_cert_file: files.ca } }),
    opts,
  );
  await roundTrip(host, auth);

  // The system trust store does not know the test CA: the handshake must fail.
  await assert.rejects(
    mountAuthServer(host, redisConfig(host, upstream, { ...base, dial_timeout: '1s', tls: {} }), opts),
    /cannot connect to Redis/,
  );
  // Plain TCP to a TLS-only port fails too.
  await assert.rejects(
    mountAuthServer(host, redisConfig(host, upstream, { ...base, dial_timeout: '1s' }), opts),
    /cannot connect to Redis/,
  );
  // Verification off, explicitly: it connects and stores (a new server: new signing keys).
  await mountAuthServer(
    host,
    redisConfig(host, upstream, { ...base, tls: { insecure_skip_verify: true } }),
    opts,
  );
  const unverified = await authorize(await registerClient(host));
  assert.equal((await callResource(host, unverified.access_token)).status, 200);
  const keys = cli(redis.port, PASSWORD, '--tls', '--cacert', files.ca, '--scan').trim().split('\n');
  assert.ok(
    keys.some((k) => k.includes(':refresh:')),
    `tokens stored over TLS: ${keys.join(',')}`,
  );
});

/** Retries an OAuth call that failed with HTTP 503, for up to 30 s. */
async function retryUnavailable<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const status = ((err as { cause?: unknown }).cause as { status?: number } | undefined)?.status;
      if (status !== 503 || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

test('Redis Sentinel: the master fails over mid-test and no issued token or refresh token is lost', async (t) => {
  if (!requireService(t, 'redis-sentinel', redisAvailable(), REDIS_HINT)) return;
  const setup = await startSentinelSetup(PASSWORD);
  t.after(() => setup.stop());
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  const auth = await mountAuthServer(
    host,
    redisConfig(host, upstream, {
      sentinel_config: { master_name: setup.masterName, sentinel_addrs: setup.sentinelAddrs, db: 0 },
      acl_user_config: { password_env_var: 'REDIS_PASS' },
      write_timeout: '5s',
    }),
    { env: env({ REDIS_PASS: PASSWORD }) },
  );
  const session = await registerClient(host);
  const a = await authorize(session, 'alice');
  const b = await authorize(session, 'bob');
  const aRotated = await refresh(session, a.refresh_token);

  // Fail over: the replica becomes master, the old master is demoted to its replica.
  const oldMaster = setup.currentMaster();
  assert.equal(oldMaster, setup.master.addr);
  assert.match(setup.sentinel('SENTINEL', 'FAILOVER', setup.masterName), /OK/);
  await waitUntil(() => setup.currentMaster() === setup.replica.addr, 60_000, 250);
  // Writes wait for one replica (WAIT); give the demoted master time to re-attach.
  await waitUntil(
    () => /connected_slaves:1/.test(cli(setup.replica.port, PASSWORD, 'INFO', 'replication')),
    60_000,
    250,
  );

  // Everything issued before the failover still works against the new master.
  await auth.verifyAccessToken(a.access_token, host.resource);
  await auth.verifyAccessToken(b.access_token, host.resource);
  assert.equal((await callResource(host, aRotated.access_token)).status, 200, 'upstream tokens survived');
  // While the client library follows the failover, the token endpoint may answer 503
  // (temporarily unavailable). That consumes nothing — the replacement is stored before the
  // presented token is marked used — so a client simply retries, as this one does.
  const a2 = await retryUnavailable(() => refresh(session, aRotated.refresh_token));
  const b2 = await retryUnavailable(() => refresh(session, b.refresh_token));
  await auth.verifyAccessToken(a2.access_token, host.resource);
  await auth.verifyAccessToken(b2.access_token, host.resource);
  // The "used" marks survived too: replaying a rotated token is still detected.
  await assert.rejects(
    refresh(session, a.refresh_token),
    (err: unknown) => err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant',
  );
  // And a brand-new login works on the new master.
  const c = await retryUnavailable(() => authorize(session, 'carol'));
  assert.equal((await callResource(host, c.access_token)).status, 200);
});

test('Redis Cluster (3 masters): full flow with hash-tagged keys', async (t) => {
  if (!requireService(t, 'redis-server (cluster)', redisAvailable(), REDIS_HINT)) return;
  const cluster = await startRedisCluster(PASSWORD);
  t.after(() => cluster.stop());
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  const auth = await mountAuthServer(
    host,
    redisConfig(host, upstream, {
      addr: cluster.addr,
      cluster_mode: true,
      key_prefix: 'skep:auth:', // no hash tag: Skep adds one so multi-key scripts stay in one slot
      acl_user_config: { password_env_var: 'REDIS_PASS' },
    }),
    { env: env({ REDIS_PASS: PASSWORD }) },
  );
  const { session, tokens, refreshed } = await roundTrip(host, auth);
  await assert.rejects(
    refresh(session, tokens.refresh_token),
    (err: unknown) => err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant',
  );
  await assert.rejects(auth.verifyAccessToken(refreshed.access_token, host.resource), /revoked/);
  // All keys live on one node (one slot) because of the hash tag.
  const perNode = cluster.nodes.map((n) => Number(cli(n.port, PASSWORD, 'DBSIZE').trim()));
  assert.equal(perNode.filter((n) => n > 0).length, 1, `keys per node: ${perNode.join(',')}`);
});
