/** Validation of `embedded_auth_server_config` (ToolHive's field and its CRD's embeddedAuthServer rules). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  type EmbeddedAuthServerConfig,
  parseDuration,
  resolveAuthServerConfig,
} from '../../../src/authserver/index.js';

const base = (): EmbeddedAuthServerConfig => ({
  issuer: 'https://auth.example.test',
  allowed_audiences: ['https://mcp.example.test/mcp'],
  upstreams: [
    { name: 'idp', type: 'oidc', oidc_config: { issuer_url: 'https://idp.example.test', client_id: 'c' } },
  ],
});

test('token lifespans default to 1h / 10m / 168h and parse Go durations', () => {
  const cfg = resolveAuthServerConfig(base(), {});
  assert.equal(cfg.accessTokenLifespanSec, 3600);
  assert.equal(cfg.authCodeLifespanSec, 600);
  assert.equal(cfg.refreshTokenLifespanSec, 168 * 3600);
  assert.equal(parseDuration('1h30m', 'x'), 5_400_000);
  assert.equal(parseDuration('1.5s', 'x'), 1500);
  assert.throws(() => parseDuration('10 minutes', 'x'), /duration/);
  assert.throws(() => parseDuration('-1s', 'x'), /duration/);
  const custom = resolveAuthServerConfig(
    { ...base(), token_lifespans: { access_token_lifespan: '15m' } },
    {},
  );
  assert.equal(custom.accessTokenLifespanSec, 900);
  assert.throws(
    () => resolveAuthServerConfig({ ...base(), token_lifespans: { access_token_lifespan: '48h' } }, {}),
    /access_token_lifespan must be between/,
  );
});

test('oidc upstream defaults (scopes openid offline_access, redirect {issuer}/oauth/callback)', () => {
  const up = resolveAuthServerConfig(base(), {}).upstreams[0];
  assert.deepEqual(up?.scopes, ['openid', 'offline_access']);
  assert.equal(up?.redirectUri, 'https://auth.example.test/oauth/callback');
});

test('RFC 8414 §2: the issuer is https (http only for localhost) without query, fragment or trailing slash', () => {
  for (const issuer of [
    'http://auth.example.test',
    'https://auth.example.test/',
    'https://a.example?x=1',
    'https://a.example#f',
  ]) {
    assert.throws(() => resolveAuthServerConfig({ ...base(), issuer }, {}), /issuer/, issuer);
  }
  assert.equal(
    resolveAuthServerConfig({ ...base(), issuer: 'http://localhost:8080' }, {}).issuer,
    'http://localhost:8080',
  );
  const moved = resolveAuthServerConfig(
    { ...base(), authorization_endpoint_base_url: 'https://login.example.test' },
    {},
  );
  assert.equal(moved.authorizationEndpoint, 'https://login.example.test/oauth/authorize');
});

test('reserved names in additional_authorization_params are refused', () => {
  for (const name of [
    'response_type',
    'client_id',
    'redirect_uri',
    'scope',
    'state',
    'code_challenge',
    'code_challenge_method',
    'nonce',
  ]) {
    const cfg = base();
    (
      cfg.upstreams?.[0]?.oidc_config as { additional_authorization_params?: Record<string, string> }
    ).additional_authorization_params = { [name]: 'x' };
    assert.throws(() => resolveAuthServerConfig(cfg, {}), new RegExp(`"${name}" is set by the server`));
  }
});

test('upstream type must match its config block; oauth2 needs exactly one of client_id or dcr_config', () => {
  assert.throws(
    () =>
      resolveAuthServerConfig(
        {
          ...base(),
          upstreams: [
            { name: 'x', type: 'oauth2', oidc_config: { issuer_url: 'https://i', client_id: 'c' } },
          ],
        },
        {},
      ),
    /oauth2_config when type is "oauth2"/,
  );
  const oauth2 = { authorization_endpoint: 'https://i/auth', token_endpoint: 'https://i/token' };
  assert.throws(
    () =>
      resolveAuthServerConfig(
        { ...base(), upstreams: [{ name: 'x', type: 'oauth2', oauth2_config: oauth2 }] },
        {},
      ),
    /exactly one of client_id or dcr_config/,
  );
  assert.throws(
    () =>
      resolveAuthServerConfig(
        {
          ...base(),
          upstreams: [{ name: 'Bad_Name', type: 'oauth2', oauth2_config: { ...oauth2, client_id: 'c' } }],
        },
        {},
      ),
    /upstreams\[0\]\.name: must match pattern/,
  );
  const ok = resolveAuthServerConfig(
    {
      ...base(),
      upstreams: [
        {
          name: 'x',
          type: 'oauth2',
          oauth2_config: {
            ...oauth2,
            client_id: 'c',
            token_response_mapping: { access_token_path: 'data.token' },
          },
        },
      ],
    },
    {},
  );
  assert.deepEqual(ok.upstreams[0]?.tokenResponseMapping, {
    access_token_path: 'data.token',
    expires_in_path: 'expires_in',
    refresh_token_path: 'refresh_token',
    scope_path: 'scope',
  });
});

test('the current HMAC secret is at least 32 bytes; secrets come from files and env vars', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-as-cfg-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'short'), 'too-short');
  writeFileSync(join(dir, 'long'), 'x'.repeat(32));
  assert.throws(
    () => resolveAuthServerConfig({ ...base(), hmac_secret_files: [join(dir, 'short')] }, {}),
    /at least 32 bytes/,
  );
  // Older secrets only verify, so they may be shorter.
  assert.equal(
    resolveAuthServerConfig({ ...base(), hmac_secret_files: [join(dir, 'long'), join(dir, 'short')] }, {})
      .hmacSecrets.length,
    2,
  );
  const withSecret = base();
  (withSecret.upstreams?.[0]?.oidc_config as { client_secret_env_var?: string }).client_secret_env_var =
    'IDP_SECRET';
  assert.throws(() => resolveAuthServerConfig(withSecret, {}), /IDP_SECRET is not set/);
  assert.equal(
    resolveAuthServerConfig(withSecret, { IDP_SECRET: 's3cret' }).upstreams[0]?.clientSecret,
    's3cret',
  );
});

test('redis needs exactly one of addr or sentinel_config, cluster needs addr, password from env', () => {
  const redis = (r: object) => ({
    ...base(),
    storage: { type: 'redis', redis_config: { acl_user_config: { password_env_var: 'P' }, ...r } },
  });
  assert.throws(
    () => resolveAuthServerConfig(redis({}), { P: 'x' }),
    /exactly one of addr or sentinel_config/,
  );
  assert.throws(
    () =>
      resolveAuthServerConfig(
        redis({ addr: 'h:1', sentinel_config: { master_name: 'm', sentinel_addrs: ['h:2'] } }),
        { P: 'x' },
      ),
    /exactly one of addr or sentinel_config/,
  );
  assert.throws(
    () =>
      resolveAuthServerConfig(
        redis({ cluster_mode: true, sentinel_config: { master_name: 'm', sentinel_addrs: ['h:2'] } }),
        { P: 'x' },
      ),
    /cluster_mode requires addr/,
  );
  assert.throws(() => resolveAuthServerConfig(redis({ addr: 'h:1' }), {}), /P is not set/);
  const ok = resolveAuthServerConfig(
    redis({ addr: 'h:6379', key_prefix: 'thv:auth:', read_timeout: '250ms' }),
    { P: 'x' },
  );
  assert.ok(ok.storage.type === 'redis');
  if (ok.storage.type === 'redis') {
    assert.equal(
      ok.storage.redis.keyPrefix,
      'thv:auth:{authserver}:',
      'a hash tag is added for Cluster slots',
    );
    assert.equal(ok.storage.redis.readTimeoutMs, 250);
    assert.equal(ok.storage.redis.dialTimeoutMs, 5000);
  }
  assert.throws(() => resolveAuthServerConfig({ ...base(), storage: { type: 'etcd' } }, {}), /storage.type/);
});
