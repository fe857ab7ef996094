/**
 * The full OAuth 2.1 flow against Skep's embedded authorization server with memory storage:
 * a real client (oauth4webapi) registers, authorizes, logs in at a real upstream OIDC
 * provider (oidc-provider, login and consent driven over HTTP), and exchanges and refreshes
 * tokens; the protected resource accepts the token and rejects forged, expired, revoked and
 * wrong-audience ones.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import * as oauth from 'oauth4webapi';
import {
  authorize,
  baseConfig,
  browserLogin,
  callResource,
  decideConsent,
  mountAuthServer,
  openConsentPage,
  refresh,
  registerClient,
  startHost,
  startUpstream,
} from './harness.js';

test('RFC 6749/7636/7591/8414: full flow with a real client and a real upstream OIDC login (memory storage)', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  let skewMs = 0;
  const auth = await mountAuthServer(host, baseConfig(host, upstream), { now: () => Date.now() + skewMs });

  const session = await registerClient(host);
  assert.equal(session.client.token_endpoint_auth_method, 'none');
  const tokens = await authorize(session, 'alice');

  // The access token: a JWT from this issuer for the resource, with the claims the proxy relies on.
  const claims = decodeJwt(tokens.access_token);
  assert.equal(decodeProtectedHeader(tokens.access_token).typ, 'at+jwt');
  assert.equal(claims.iss, host.url);
  assert.deepEqual(claims.aud, [host.resource]);
  assert.equal(claims['client_id'], session.client.client_id);
  assert.deepEqual(claims['scp'], ['openid', 'profile', 'offline_access']);
  assert.equal(claims['name'], 'User alice');
  assert.match(
    String(claims.sub),
    /^[0-9a-f-]{36}$/,
    'the subject is an internal user id, not the upstream one',
  );
  assert.equal((claims.exp as number) - (claims.iat as number), 3600, 'default access lifespan 1h');
  assert.equal(tokens.response.expires_in, 3600);

  // The proxy accepts it, and upstreamInject finds the upstream access token of the session.
  const ok = await callResource(host, tokens.access_token);
  assert.equal(ok.status, 200, ok.body);
  const okBody = JSON.parse(ok.body) as { sub: string; upstream: string };
  assert.equal(okBody.sub, claims.sub);
  assert.ok(okBody.upstream.length > 10);
  assert.notEqual(okBody.upstream, tokens.access_token);

  // Same upstream user logging in again maps to the same internal user.
  const second = await authorize(session, 'alice');
  assert.equal(decodeJwt(second.access_token).sub, claims.sub);
  const bob = await authorize(session, 'bob');
  assert.notEqual(decodeJwt(bob.access_token).sub, claims.sub);

  // Refresh rotates the refresh token and issues a new access token for the same subject.
  const refreshed = await refresh(session, tokens.refresh_token);
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
  assert.equal(decodeJwt(refreshed.access_token).sub, claims.sub);
  assert.equal((await callResource(host, refreshed.access_token)).status, 200);

  // Rejections: wrong audience, forged signature, expired.
  await assert.rejects(auth.verifyAccessToken(refreshed.access_token, `${host.url}/other`), /aud/);
  const forgedKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const header = decodeProtectedHeader(refreshed.access_token);
  const forged = await new SignJWT(decodeJwt(refreshed.access_token))
    .setProtectedHeader({ alg: 'ES256', kid: header.kid as string, typ: 'at+jwt' })
    .sign(forgedKey);
  await assert.rejects(auth.verifyAccessToken(forged, host.resource), /not a valid token|signature/);
  assert.equal((await callResource(host, forged)).status, 401);
  const [h, p] = refreshed.access_token.split('.');
  const noneAlg = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`;
  await assert.rejects(auth.verifyAccessToken(noneAlg, host.resource));
  assert.ok(h);
  skewMs = 2 * 3600_000;
  await assert.rejects(auth.verifyAccessToken(refreshed.access_token, host.resource), /expired/);
  skewMs = 0;

  // RFC 9700 §4.14.2: replaying the rotated refresh token revokes the whole grant.
  await assert.rejects(refresh(session, tokens.refresh_token), (err: unknown) => {
    assert.ok(err instanceof oauth.ResponseBodyError);
    assert.equal(err.error, 'invalid_grant');
    return true;
  });
  await assert.rejects(
    refresh(session, refreshed.refresh_token),
    (err: unknown) => err instanceof oauth.ResponseBodyError && err.error === 'invalid_grant',
  );
  await assert.rejects(auth.verifyAccessToken(refreshed.access_token, host.resource), /revoked/);
  assert.equal((await callResource(host, refreshed.access_token)).status, 401);
  // Other sessions are untouched.
  assert.equal((await callResource(host, second.access_token)).status, 200);
});

test('OAuth 2.1 §4.1.3: a replayed authorization code fails and revokes the tokens issued from it', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  const auth = await mountAuthServer(host, baseConfig(host, upstream));
  const session = await registerClient(host);

  const verifier = oauth.generateRandomCodeVerifier();
  const url = new URL(session.as.authorization_endpoint as string);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: session.client.client_id,
    redirect_uri: session.redirectUri,
    scope: 'openid offline_access',
    state: 'client-state-123',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString();
  const callback = await browserLogin(url.href, session.redirectUri);
  assert.equal(callback.searchParams.get('state'), 'client-state-123', 'state round trip');
  assert.equal(callback.searchParams.get('iss'), host.url, 'RFC 9207 iss');
  const code = callback.searchParams.get('code') as string;

  const tokenRequest = (form: Record<string, string>) =>
    fetch(`${host.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  const base = {
    grant_type: 'authorization_code',
    code,
    client_id: session.client.client_id,
    redirect_uri: session.redirectUri,
  };
  // PKCE is required and checked.
  const noVerifier = await tokenRequest(base);
  assert.equal(noVerifier.status, 400);
  assert.equal(((await noVerifier.json()) as { error: string }).error, 'invalid_grant');
  const wrongVerifier = await tokenRequest({ ...base, code_verifier: oauth.generateRandomCodeVerifier() });
  assert.equal(((await wrongVerifier.json()) as { error: string }).error, 'invalid_grant');

  const first = await tokenRequest({ ...base, code_verifier: verifier });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('cache-control'), 'no-store');
  const issued = (await first.json()) as { access_token: string; refresh_token: string };
  await auth.verifyAccessToken(issued.access_token, host.resource);

  const replay = await tokenRequest({ ...base, code_verifier: verifier });
  assert.equal(replay.status, 400);
  assert.equal(((await replay.json()) as { error: string }).error, 'invalid_grant');
  await assert.rejects(auth.verifyAccessToken(issued.access_token, host.resource), /revoked/);
  const refreshAfter = await tokenRequest({
    grant_type: 'refresh_token',
    refresh_token: issued.refresh_token,
    client_id: session.client.client_id,
  });
  assert.equal(((await refreshAfter.json()) as { error: string }).error, 'invalid_grant');
});

test('authorize: exact redirect-URI matching, PKCE S256 required, unknown scopes refused', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  await mountAuthServer(host, baseConfig(host, upstream));
  const session = await registerClient(host, 'http://127.0.0.1:9/cb');
  const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier());
  const go = (params: Record<string, string>) =>
    fetch(`${host.url}/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
  const good = {
    response_type: 'code',
    client_id: session.client.client_id,
    redirect_uri: 'http://127.0.0.1:9/cb',
    state: 's1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  };
  // The upstream is reached only through the consent page (no confused deputy).
  const { form, jar } = await openConsentPage(`${host.url}/oauth/authorize?${new URLSearchParams(good)}`);
  const ok = await decideConsent(form, jar, 'approve');
  assert.equal(ok.status, 303);
  const upstreamUrl = new URL(ok.headers.get('location') as string);
  assert.equal(upstreamUrl.origin, upstream.issuer);
  assert.equal(upstreamUrl.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(upstreamUrl.searchParams.get('prompt'), 'consent', 'additional_authorization_params are sent');
  assert.ok(upstreamUrl.searchParams.get('nonce'));

  for (const redirect_uri of [
    'http://127.0.0.1:9/cb/',
    'http://127.0.0.1:9/cb?x=1',
    'http://127.0.0.1:10/cb',
  ]) {
    const res = await go({ ...good, redirect_uri });
    assert.equal(res.status, 400, `${redirect_uri} must not be accepted or redirected to`);
    assert.equal(res.headers.get('location'), null);
  }
  const unknownClient = await go({ ...good, client_id: 'nope' });
  assert.equal(unknownClient.status, 400);

  const plain = await go({ ...good, code_challenge_method: 'plain' });
  assert.equal(plain.status, 302);
  const plainBack = new URL(plain.headers.get('location') as string);
  assert.equal(plainBack.searchParams.get('error'), 'invalid_request');
  assert.equal(plainBack.searchParams.get('state'), 's1');
  const noPkce = await go({ ...good, code_challenge: '' });
  assert.equal(
    new URL(noPkce.headers.get('location') as string).searchParams.get('error'),
    'invalid_request',
  );
  const badScope = await go({ ...good, scope: 'admin' });
  assert.equal(
    new URL(badScope.headers.get('location') as string).searchParams.get('error'),
    'invalid_scope',
  );
  const badResource = await go({ ...good, resource: 'https://elsewhere.example/mcp' });
  assert.equal(
    new URL(badResource.headers.get('location') as string).searchParams.get('error'),
    'invalid_target',
  );
});

test('RFC 8414 / RFC 9728 metadata, OIDC alias, JWKS and authorization_endpoint_base_url', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  await mountAuthServer(host, {
    ...baseConfig(host, upstream),
    authorization_endpoint_base_url: 'https://login.example.test',
  });
  const meta = (await (await fetch(`${host.url}/.well-known/oauth-authorization-server`)).json()) as Record<
    string,
    unknown
  >;
  assert.equal(meta['issuer'], host.url);
  assert.equal(meta['authorization_endpoint'], 'https://login.example.test/oauth/authorize');
  assert.equal(meta['token_endpoint'], `${host.url}/oauth/token`, 'only the authorize URL moves');
  assert.equal(meta['registration_endpoint'], `${host.url}/oauth/register`);
  assert.equal(meta['jwks_uri'], `${host.url}/.well-known/jwks.json`);
  assert.deepEqual(meta['code_challenge_methods_supported'], ['S256']);
  assert.equal(meta['subject_types_supported'], undefined);
  const oidc = (await (await fetch(`${host.url}/.well-known/openid-configuration`)).json()) as Record<
    string,
    unknown
  >;
  assert.deepEqual(oidc['subject_types_supported'], ['public']);
  assert.deepEqual(oidc['id_token_signing_alg_values_supported'], ['ES256']);
  const prm = await fetch(`${host.url}/.well-known/oauth-protected-resource/mcp`, {
    headers: { origin: 'http://app.example' },
  });
  assert.equal(prm.headers.get('access-control-allow-origin'), 'http://app.example');
  const prmBody = (await prm.json()) as Record<string, unknown>;
  assert.equal(prmBody['resource'], host.resource);
  assert.deepEqual(prmBody['authorization_servers'], [host.url]);
  const jwks = (await (await fetch(`${host.url}/.well-known/jwks.json`)).json()) as {
    keys: { kid: string }[];
  };
  assert.equal(jwks.keys.length, 1);
  assert.ok(jwks.keys[0]?.kid);
  const other = await fetch(`${host.url}/not-auth`);
  assert.equal(other.status, 404, 'other paths are left to the host');
});

test('RFC 7591: registration validates metadata and answers 201 with no-store', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  await mountAuthServer(host, baseConfig(host, upstream), {
    registerRateLimit: { perSecond: 100, burst: 100 },
  });
  const register = (body: unknown, type = 'application/json') =>
    fetch(`${host.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': type },
      body: JSON.stringify(body),
    });
  const ok = await register({ redirect_uris: ['https://app.example/cb', 'com.example.app:/cb'] });
  assert.equal(ok.status, 201);
  assert.equal(ok.headers.get('cache-control'), 'no-store');
  const created = (await ok.json()) as Record<string, unknown>;
  assert.equal(created['token_endpoint_auth_method'], 'none');
  assert.equal(created['scope'], 'openid profile email offline_access');
  const cases: [unknown, string][] = [
    [{}, 'invalid_redirect_uri'],
    [{ redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://a.example/cb#frag'] }, 'invalid_redirect_uri'],
    [
      { redirect_uris: ['https://a.example/cb'], token_endpoint_auth_method: 'client_secret_basic' },
      'invalid_client_metadata',
    ],
    [{ redirect_uris: ['https://a.example/cb'], scope: 'openid admin' }, 'invalid_client_metadata'],
    [
      { redirect_uris: ['https://a.example/cb'], grant_types: ['client_credentials'] },
      'invalid_client_metadata',
    ],
  ];
  for (const [body, error] of cases) {
    const res = await register(body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(((await res.json()) as { error: string }).error, error, JSON.stringify(body));
  }
  assert.equal((await register({ redirect_uris: ['https://a.example/cb'] }, 'text/plain')).status, 400);
  const big = await fetch(`${host.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['https://a.example/cb'], client_name: 'x'.repeat(70 * 1024) }),
  });
  assert.equal(big.status, 413);
  // Sent chunked (no Content-Length), the limit holds as the body grows.
  const chunk = new TextEncoder().encode(' '.repeat(16 * 1024));
  let sent = 0;
  const chunked = await fetch(`${host.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    duplex: 'half',
    body: new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 8) controller.enqueue(chunk);
        else controller.close();
      },
    }),
  });
  assert.equal(chunked.status, 413);
  assert.equal(((await chunked.json()) as { error: string }).error, 'invalid_request');
});

test('token endpoint rate limit answers 429 with Retry-After', async (t) => {
  const host = await startHost(t);
  const upstream = await startUpstream(t, [host.callbackUrl]);
  await mountAuthServer(host, baseConfig(host, upstream), { tokenRateLimit: { perSecond: 0.01, burst: 3 } });
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${host.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&client_id=x&refresh_token=y',
    });
    statuses.push(res.status);
    if (res.status === 429) assert.ok(Number(res.headers.get('retry-after')) >= 1);
    await res.arrayBuffer();
  }
  assert.deepEqual(statuses, [401, 401, 401, 429, 429]);
});
