/**
 * Key and HMAC-secret rotation across restarts of the authorization server (same storage):
 * tokens signed by the previous key still verify while it is a fallback key and stop
 * verifying once it is removed; refresh tokens signed with the previous HMAC secret still
 * work while it is listed, and stop once it is removed. Also: an `oauth2` upstream with
 * explicit endpoints, RFC 7591 registration at the upstream (`dcr_config`) and a userinfo
 * `field_mapping`, against the same real oidc-provider.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import * as oauth from 'oauth4webapi';
import { MemoryStorage } from '../../../src/authserver/index.js';
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

test('signing-key and HMAC rotation: previous key/secret verify as fallbacks; removed ones do not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skep-as-rotation-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text, { mode: 0o600 });
    return name;
  };
  write(
    'key-a.pem',
    generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string,
  );
  write(
    'key-b.pem',
    generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string,
  );
  const hmacA = join(dir, write('hmac-a', randomBytes(32).toString('hex')));
  const hmacB = join(dir, write('hmac-b', randomBytes(32).toString('hex')));

  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  const storage = new MemoryStorage();
  t.after(() => storage.close());
  const base = baseConfig(host, upstream);

  // Generation 1: key A signs, HMAC secret A.
  await mountAuthServer(
    host,
    {
      ...base,
      signing_key_config: { key_dir: dir, signing_key_file: 'key-a.pem' },
      hmac_secret_files: [hmacA],
    },
    { storage },
  );
  const session = await registerClient(host);
  const one = await authorize(session, 'alice');
  const two = await authorize(session, 'bob');
  assert.equal(decodeProtectedHeader(one.access_token).alg, 'ES256');

  // Generation 2: key B signs (RS256), A verifies; HMAC B current, A verifies.
  const gen2 = await mountAuthServer(
    host,
    {
      ...base,
      signing_key_config: { key_dir: dir, signing_key_file: 'key-b.pem', fallback_key_files: ['key-a.pem'] },
      hmac_secret_files: [hmacB, hmacA],
    },
    { storage },
  );
  await gen2.verifyAccessToken(one.access_token, host.resource);
  const jwks = (await (await fetch(`${host.url}/.well-known/jwks.json`)).json()) as {
    keys: { kid: string }[];
  };
  assert.equal(
    jwks.keys.length,
    2,
    'fallback keys are published so other validators can verify rotated tokens',
  );
  const rotated = await refresh(session, one.refresh_token);
  assert.equal(
    decodeProtectedHeader(rotated.access_token).alg,
    'RS256',
    'new tokens are signed by the new key',
  );
  assert.notEqual(
    decodeProtectedHeader(rotated.access_token).kid,
    decodeProtectedHeader(one.access_token).kid,
  );
  assert.equal((await callResource(host, rotated.access_token)).status, 200);

  // Generation 3: key A and HMAC A removed.
  const gen3 = await mountAuthServer(
    host,
    {
      ...base,
      signing_key_config: { key_dir: dir, signing_key_file: 'key-b.pem' },
      hmac_secret_files: [hmacB],
    },
    { storage },
  );
  await assert.rejects(gen3.verifyAccessToken(two.access_token, host.resource), /access token rejected/);
  assert.equal((await callResource(host, two.access_token)).status, 401);
  await assert.rejects(
    refresh(session, two.refresh_token),
    (err: unknown) => err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant',
    'a refresh token signed with the removed HMAC secret is refused',
  );
  // Tokens of the current generation keep working.
  await gen3.verifyAccessToken(rotated.access_token, host.resource);
  const again = await refresh(session, rotated.refresh_token);
  assert.equal(decodeJwt(again.access_token).sub, decodeJwt(one.access_token).sub);
});

test('oauth2 upstream: explicit endpoints, RFC 7591 registration at the upstream, userinfo field_mapping', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  const auth = await mountAuthServer(host, {
    issuer: host.url,
    allowed_audiences: [host.resource],
    upstreams: [
      {
        name: 'idp',
        type: 'oauth2',
        oauth2_config: {
          authorization_endpoint: `${upstream.issuer}/auth`,
          token_endpoint: `${upstream.issuer}/token`,
          dcr_config: { registration_endpoint: `${upstream.issuer}/reg`, software_id: 'skep-tests' },
          scopes: ['openid', 'email', 'profile', 'offline_access'],
          additional_authorization_params: { prompt: 'consent' },
          userinfo: {
            endpoint_url: `${upstream.issuer}/me`,
            field_mapping: {
              subject_fields: ['user_id', 'sub'],
              name_fields: ['display_name', 'name'],
              email_fields: ['email'],
            },
          },
          insecure_allow_http: true,
        },
      },
    ],
  });
  const session = await registerClient(host);
  const tokens = await authorize(session, 'dora');
  const claims = decodeJwt(tokens.access_token);
  assert.equal(claims['name'], 'User dora', 'name from the second name field (the first is absent)');
  assert.equal(claims['email'], 'dora@example.test');
  const res = await callResource(host, tokens.access_token);
  assert.equal(res.status, 200);
  // The upstream access token works at the upstream: it is a real token of that provider.
  const upstreamToken = (JSON.parse(res.body) as { upstream: string }).upstream;
  const me = await fetch(`${upstream.issuer}/me`, { headers: { authorization: `Bearer ${upstreamToken}` } });
  assert.equal(((await me.json()) as { sub: string }).sub, 'dora');
  // Registration happened once and is reused for the next login.
  const second = await authorize(session, 'dora');
  assert.equal(decodeJwt(second.access_token).sub, claims.sub);
  await auth.verifyAccessToken(second.access_token, host.resource);
});

test('upstreamToken refreshes an expired upstream access token with its refresh token', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl], { accessTokenTtlSec: 60 });
  let skewMs = 0;
  const auth = await mountAuthServer(host, baseConfig(host, upstream), { now: () => Date.now() + skewMs });
  const session = await registerClient(host);
  const tokens = await authorize(session);
  const claims = await auth.verifyAccessToken(tokens.access_token, host.resource);
  const first = await auth.upstreamToken(claims.tsid, 'idp');
  // Past the upstream token's 60 s lifetime (by Skep's clock): the next call refreshes it.
  skewMs = 120_000;
  const [a, b] = await Promise.all([
    auth.upstreamToken(claims.tsid, 'idp'),
    auth.upstreamToken(claims.tsid, 'idp'),
  ]);
  assert.notEqual(a, first);
  assert.equal(a, b, 'concurrent callers share one refresh');
  const me = await fetch(`${upstream.issuer}/me`, { headers: { authorization: `Bearer ${a}` } });
  assert.equal(me.status, 200);
  assert.equal(await auth.upstreamToken(claims.tsid, 'idp'), a, 'the refreshed token was stored');
  await assert.rejects(auth.upstreamToken('no-such-session', 'idp'), /re-authentication required/);
});
