/**
 * Registry authentication (as ToolHive's registry login and `PUT /api/v1beta/registry` have it)
 * with real parts: oidc-provider as the issuer, a loopback registry that checks the bearer JWT
 * against the provider's JWKS, Skep's encrypted secrets store. The login is driven as a user would:
 * the authorization URL Skep shows is followed with an HTTP client through the provider's login and
 * consent pages to Skep's loopback callback.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { type TestContext, test } from 'node:test';
import { pino } from 'pino';
import { createContext, registryTokenStore } from '../../../src/control/app/index.js';
import {
  refreshTokenSecretName,
  RegistryService,
  type RegistryTokenStore,
} from '../../../src/registry/index.js';
import { isSkepError, SkepError } from '../../../src/shared/index.js';
import { testApp } from '../../helpers/api.js';
import { tempHome } from '../../helpers/home.js';
import { browserLogin } from '../authserver/harness.js';
import {
  REGISTRY_AUDIENCE,
  REGISTRY_CLIENT_ID,
  REGISTRY_SCOPE,
  type RegistryIdp,
  startProtectedRegistry,
  startRegistryIdp,
} from './auth-harness.js';

const SCOPES = ['openid', 'offline_access', REGISTRY_SCOPE];

/** The secrets store of a fresh home (encrypted provider, password from the environment). */
async function secretsHome(t: TestContext, setup = true) {
  const home = tempHome(t, 'skep-registry-auth-');
  home.env['SKEP_SECRETS_PASSWORD'] = 'registry-auth-test-password';
  const ctx = createContext(home.config, { env: home.env });
  t.after(() => ctx.close());
  if (setup) await ctx.secrets.setup({ provider_type: 'encrypted' });
  return { home, ctx, tokens: registryTokenStore(ctx.secrets) };
}

/** Every log line, to check that no token ever reaches the log. */
function capturedLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), text: () => lines.join('') };
}

/** Plays the user: follows the login URL through the provider's pages, then calls Skep's callback. */
function userLogsIn(urls: string[]): (url: string) => Promise<void> {
  return async (url) => {
    urls.push(url);
    const redirect = new URL(url).searchParams.get('redirect_uri') ?? '';
    const callback = await browserLogin(url, redirect);
    const done = await fetch(callback);
    assert.equal(done.status, 200, await done.text());
  };
}

function service(
  t: TestContext,
  home: { config: { paths: { cacheDir: string } } },
  store: ReturnType<typeof createContext>['store'],
  tokens: RegistryTokenStore | undefined,
  extra: Partial<ConstructorParameters<typeof RegistryService>[0]> = {},
): RegistryService {
  const registry = new RegistryService({
    store,
    cacheDir: home.config.paths.cacheDir,
    ...(tokens !== undefined ? { tokens } : {}),
    ...extra,
  });
  t.after(() => registry.close());
  return registry;
}

function authBody(idp: RegistryIdp, extra: Record<string, unknown> = {}) {
  return {
    issuer: idp.issuer,
    client_id: REGISTRY_CLIENT_ID,
    audience: REGISTRY_AUDIENCE,
    scopes: SCOPES,
    callback_port: 0,
    ...extra,
  };
}

async function rejectsWith(promise: Promise<unknown>, code: string, message?: RegExp): Promise<SkepError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(isSkepError(err), String(err));
    assert.equal(err.code, code, err.message);
    if (message !== undefined) assert.match(err.message, message);
    return err;
  }
  assert.fail(`expected ${code}`);
}

test(
  'configure → registry_auth_required (configured) → login → authenticated, bearer on every request → refresh → logout',
  { timeout: 120_000 },
  async (t) => {
    const idp = await startRegistryIdp(t);
    const registry = await startProtectedRegistry(t, idp);
    const { home, ctx, tokens } = await secretsHome(t);
    let now = Date.now();
    const urls: string[] = [];
    const log = capturedLogger();
    const reg = service(t, home, ctx.store, tokens, {
      now: () => now,
      openUrl: userLogsIn(urls),
      logger: log.logger,
    });

    // PUT with auth: OIDC discovery is checked; the registry's 401 before a login is expected.
    assert.deepEqual(
      await reg.configure('default', { api_url: registry.url, allow_private_ip: true, auth: authBody(idp) }),
      { type: 'api' },
    );
    assert.deepEqual(reg.authInfo(), {
      auth_status: 'configured',
      auth_type: 'oauth',
      auth_config: {
        issuer: idp.issuer,
        client_id: REGISTRY_CLIENT_ID,
        audience: REGISTRY_AUDIENCE,
        scopes: SCOPES,
      },
    });
    assert.ok(registry.seen.length > 0 && registry.seen.every((s) => s.authorization === undefined));
    const required = await rejectsWith(
      reg.listRegistries(),
      'registry_auth_required',
      /POST to \/api\/v1beta\/registry\/auth\/login/,
    );
    assert.equal(required.status, 503);
    assert.equal(required.details?.['auth_status'], 'configured');

    // The login: authorization code + PKCE S256, loopback redirect, the audience as RFC 8707 resource.
    assert.deepEqual(await reg.loginRegistry(), { status: 'authenticated' });
    const authorize = new URL(urls[0] ?? '');
    assert.equal(authorize.origin, idp.issuer);
    assert.equal(authorize.searchParams.get('client_id'), REGISTRY_CLIENT_ID);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(authorize.searchParams.get('resource'), REGISTRY_AUDIENCE);
    assert.equal(authorize.searchParams.get('scope'), SCOPES.join(' '));
    assert.match(authorize.searchParams.get('redirect_uri') ?? '', /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    assert.equal(reg.authInfo().auth_status, 'authenticated');
    const secretName = refreshTokenSecretName(`${registry.url}/`, idp.issuer);
    assert.match(secretName, /^REGISTRY_OAUTH_[0-9a-f]{8}$/);
    const refreshToken = await ctx.secrets.get(secretName);
    assert.ok(
      refreshToken !== undefined && refreshToken.length > 10,
      'the refresh token is in the secrets store',
    );

    // Reads carry the bearer token, which the registry verified against the provider's JWKS.
    const listed = await reg.listNativeServers('default');
    assert.equal(listed.servers.length + listed.remote_servers.length, registry.document.data.servers.length);
    const [info] = await reg.listRegistries();
    assert.equal(info?.auth_status, 'authenticated');
    assert.equal(info?.server_count, registry.document.data.servers.length);
    const firstToken = registry.tokens().at(-1);
    assert.ok(firstToken !== undefined);
    const claims = registry.seen.at(-1)?.claims;
    assert.equal(claims?.['aud'], REGISTRY_AUDIENCE);
    assert.equal(claims?.['scope'], REGISTRY_SCOPE);

    // Two hours later the access token has expired: the next fetch refreshes it first.
    now += 2 * 3600_000;
    await reg.refresh('default');
    const secondToken = registry.tokens().at(-1);
    assert.ok(
      secondToken !== undefined && secondToken !== firstToken,
      'a new access token after the refresh',
    );
    const rotated = await ctx.secrets.get(secretName);
    assert.ok(
      rotated !== undefined && rotated !== refreshToken,
      'the rotated refresh token replaced the old one',
    );

    // Logout: the stored token and the content read with it are gone; no stale copy is served.
    assert.deepEqual(await reg.logoutRegistry(), { status: 'logged_out' });
    assert.equal(await ctx.secrets.get(secretName), undefined);
    assert.equal(reg.authInfo().auth_status, 'configured');
    const before = registry.seen.length;
    const after = await rejectsWith(reg.listNativeServers('default'), 'registry_auth_required');
    assert.equal(after.details?.['auth_status'], 'configured');
    assert.ok(
      registry.seen.slice(before).every((s) => s.authorization === undefined),
      'no token after logout',
    );

    // No token ever reached the log.
    const logged = log.text();
    for (const secret of [firstToken, secondToken, refreshToken, rotated])
      assert.ok(!logged.includes(secret), 'a token in the log');
    assert.match(logged, /registry login complete/);
  },
);

test('the stored login survives the process: a new service reads with the refresh token, without a login', async (t) => {
  const idp = await startRegistryIdp(t);
  const registry = await startProtectedRegistry(t, idp);
  const { home, ctx, tokens } = await secretsHome(t);
  const first = service(t, home, ctx.store, tokens, { openUrl: userLogsIn([]) });
  await first.configure('default', {
    url: `${registry.url}/registry.json`,
    allow_private_ip: true,
    auth: authBody(idp),
  });
  await first.loginRegistry();
  await first.close();

  let asked = 0;
  const second = service(t, home, ctx.store, tokens, {
    openUrl: () => {
      asked++;
    },
  });
  const page = await second.listCatalogServers({ limit: 200 });
  assert.equal(page.metadata.total, registry.document.data.servers.length);
  assert.equal(asked, 0, 'reading never starts a login');
  assert.equal(second.authInfo().auth_status, 'authenticated');
  assert.equal(registry.seen.at(-1)?.claims?.['aud'], REGISTRY_AUDIENCE);
});

test('a refresh token the provider refuses ends the login: 503 registry_auth_required, status configured, secret removed', async (t) => {
  const idp = await startRegistryIdp(t);
  const registry = await startProtectedRegistry(t, idp);
  const { home, ctx, tokens } = await secretsHome(t);
  const first = service(t, home, ctx.store, tokens, { openUrl: userLogsIn([]) });
  await first.configure('default', { api_url: registry.url, allow_private_ip: true, auth: authBody(idp) });
  await first.loginRegistry();
  await first.close();
  const secretName = refreshTokenSecretName(`${registry.url}/`, idp.issuer);
  await ctx.secrets.update(secretName, 'revoked-or-made-up-refresh-token');

  const second = service(t, home, ctx.store, tokens);
  const err = await rejectsWith(
    second.listRegistries(),
    'registry_auth_required',
    /POST to \/api\/v1beta\/registry\/auth\/login/,
  );
  assert.equal(err.details?.['auth_status'], 'configured');
  assert.equal(second.authInfo().auth_status, 'configured');
  assert.equal(await ctx.secrets.get(secretName), undefined);
});

test('a redirect to another origin does not carry the registry token', async (t) => {
  const idp = await startRegistryIdp(t);
  const registry = await startProtectedRegistry(t, idp);
  const elsewhere = await startProtectedRegistry(t, idp);
  registry.redirectTo = `${elsewhere.url}/registry.json`;
  const { home, ctx, tokens } = await secretsHome(t);
  const reg = service(t, home, ctx.store, tokens, { openUrl: userLogsIn([]) });
  await reg.configure('default', {
    url: `${registry.url}/moved.json`,
    allow_private_ip: true,
    auth: authBody(idp),
  });
  await reg.loginRegistry();
  // The other origin answers 401 to the request that reached it without the token.
  await rejectsWith(reg.listRegistries(), 'registry_auth_required');
  assert.ok(registry.seen.some((s) => s.path === '/moved.json' && s.claims !== undefined));
  assert.ok(elsewhere.seen.length > 0, 'the redirect was followed');
  assert.ok(
    elsewhere.seen.every((s) => s.authorization === undefined),
    'no Authorization sent to the other origin',
  );
});

test('PUT auth checks: issuer and client_id required, OIDC discovery, url/api sources only; login/logout need auth; no secrets store', async (t) => {
  const idp = await startRegistryIdp(t);
  const registry = await startProtectedRegistry(t, idp);
  const { home, ctx, tokens } = await secretsHome(t);
  const reg = service(t, home, ctx.store, tokens);
  const api = { api_url: registry.url, allow_private_ip: true };
  await rejectsWith(
    reg.configure('default', { ...api, auth: { client_id: 'x' } }),
    'bad_request',
    /^auth\.issuer and auth\.client_id are required$/,
  );
  await rejectsWith(
    reg.configure('default', { ...api, auth: { issuer: idp.issuer } }),
    'bad_request',
    /^auth\.issuer and auth\.client_id are required$/,
  );
  await rejectsWith(
    reg.configure('default', { ...api, auth: { issuer: registry.url, client_id: 'x' } }),
    'bad_request',
    /^failed to configure registry auth: OIDC discovery failed for issuer /,
  );
  await rejectsWith(
    reg.configure('default', { auth: authBody(idp) }),
    'bad_request',
    /built-in catalog needs none/,
  );
  assert.equal(reg.sourceConfig(), undefined, 'nothing was saved');
  assert.equal(reg.authInfo().auth_status, 'none');
  await rejectsWith(reg.loginRegistry(), 'registry_auth_not_configured', /authentication is not configured/);
  await rejectsWith(reg.logoutRegistry(), 'registry_auth_not_configured', /authentication is not configured/);

  // Scopes default to openid offline_access; an unset audience sends no resource parameter.
  const urls: string[] = [];
  const noSecrets = await secretsHome(t, false);
  const bare = service(t, noSecrets.home, noSecrets.ctx.store, noSecrets.tokens, {
    openUrl: (url) => {
      urls.push(url);
    },
  });
  await bare.configure('default', { ...api, auth: { issuer: idp.issuer, client_id: REGISTRY_CLIENT_ID } });
  assert.deepEqual(bare.authInfo().auth_config, {
    issuer: idp.issuer,
    client_id: REGISTRY_CLIENT_ID,
    scopes: ['openid', 'offline_access'],
  });
  // Without a secrets provider the login refuses to start (the refresh token has nowhere to go).
  await rejectsWith(bare.loginRegistry(), 'secrets_not_setup');
  assert.deepEqual(urls, []);

  // Omitting auth removes the login (reference: "Omitting auth clears any existing auth").
  await reg.configure('default', { ...api, auth: authBody(idp) });
  assert.equal(reg.authInfo().auth_status, 'configured');
  await rejectsWith(reg.configure('default', api), 'registry_invalid', /requires authentication/);
  await reg.configure('default', {});
  assert.equal(reg.authInfo().auth_status, 'none');
});

test('HTTP: the auth fields of the list entry and of the 503 body; PUT validation as the reference words it', async (t) => {
  const idp = await startRegistryIdp(t);
  const registry = await startProtectedRegistry(t, idp);
  const { app } = await testApp(t);
  const put = (body: unknown) =>
    app.inject({ method: 'PUT', url: '/api/v1beta/registry/default', payload: body as object });
  const missing = await put({ api_url: registry.url, allow_private_ip: true, auth: { issuer: idp.issuer } });
  assert.equal(missing.statusCode, 400);
  assert.equal(missing.json().message, 'auth.issuer and auth.client_id are required');
  const badPort = await put({
    api_url: registry.url,
    allow_private_ip: true,
    auth: authBody(idp, { callback_port: 70000 }),
  });
  assert.equal(badPort.statusCode, 400);
  assert.match(badPort.json().message, /callback_port/);
  const none = (await app.inject({ method: 'GET', url: '/api/v1beta/registry' })).json().registries[0];
  assert.equal(none.auth_status, 'none');
  assert.equal(none.auth_type, '');
  assert.equal('auth_config' in none, false);

  const ok = await put({ api_url: registry.url, allow_private_ip: true, auth: authBody(idp) });
  assert.equal(ok.statusCode, 200, ok.body);
  const list = await app.inject({ method: 'GET', url: '/api/v1beta/registry' });
  assert.equal(list.statusCode, 503);
  assert.deepEqual(list.json(), {
    code: 'registry_auth_required',
    message: 'Registry authentication required. POST to /api/v1beta/registry/auth/login to authenticate.',
    auth_status: 'configured',
    auth_type: 'oauth',
    auth_config: {
      issuer: idp.issuer,
      client_id: REGISTRY_CLIENT_ID,
      audience: REGISTRY_AUDIENCE,
      scopes: SCOPES,
    },
  });
  for (const url of ['/api/v1beta/registry/default/servers', '/registry/default/v0.1/servers']) {
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 503, url);
    assert.equal(res.json().code, 'registry_auth_required', url);
  }
  const logout = await app.inject({ method: 'POST', url: '/api/v1beta/registry/auth/logout' });
  assert.equal(logout.statusCode, 200);
  assert.deepEqual(logout.json(), { status: 'logged_out' });
  const cleared = await put({});
  assert.equal(cleared.statusCode, 200);
  const login = await app.inject({ method: 'POST', url: '/api/v1beta/registry/auth/login' });
  assert.equal(login.statusCode, 400);
  assert.match(
    login.json().message,
    /PUT \/api\/v1beta\/registry\/default .*auth \{issuer, client_id\} first/,
  );
});

test('without auth configured, a registry that starts answering 401 is registry_auth_required saying how to configure it', async (t) => {
  const idp = await startRegistryIdp(t);
  const registry = await startProtectedRegistry(t, idp);
  const { home, ctx } = await secretsHome(t);
  const reg = service(t, home, ctx.store, undefined);
  await rejectsWith(
    reg.configure('default', { api_url: registry.url, allow_private_ip: true }),
    'registry_invalid',
    /requires authentication \(HTTP 401\): add auth \{issuer, client_id\}/,
  );
  registry.requireToken = false;
  await reg.configure('default', { api_url: registry.url, allow_private_ip: true });
  registry.requireToken = true;
  const err = await rejectsWith(
    reg.refresh('default'),
    'registry_auth_required',
    /requires authentication \(HTTP 401\): PUT \/api\/v1beta\/registry\/default with auth \{issuer, client_id\}/,
  );
  assert.equal(err.details?.['auth_status'], 'none');
  // The copy read while the registry was open is not served once it asks for a token.
  await rejectsWith(reg.listRegistries(), 'registry_auth_required');
});

test('a login nobody completes ends with 504 after the login timeout; concurrent logins share one flow; the status stays configured', async (t) => {
  const idp = await startRegistryIdp(t);
  const registry = await startProtectedRegistry(t, idp);
  const { home, ctx, tokens } = await secretsHome(t);
  const shown: string[] = [];
  const reg = service(t, home, ctx.store, tokens, {
    loginTimeoutMs: 300,
    openUrl: (url) => {
      shown.push(url);
    },
  });
  await reg.configure('default', { api_url: registry.url, allow_private_ip: true, auth: authBody(idp) });
  const [first, second] = await Promise.allSettled([reg.loginRegistry(), reg.loginRegistry()]);
  for (const outcome of [first, second]) {
    assert.equal(outcome.status, 'rejected');
    const err = outcome.reason as SkepError;
    assert.equal(err.code, 'gateway_timeout');
    assert.match(err.message, /not completed in time/);
  }
  assert.equal(shown.length, 1, 'one login flow for both calls');
  assert.equal(reg.authInfo().auth_status, 'configured');
  // The flow's loopback callback is closed again.
  const port = Number(new URL(new URL(shown[0] ?? '').searchParams.get('redirect_uri') ?? '').port);
  await assert.rejects(fetch(`http://127.0.0.1:${port}/callback`));
});

test('a callback port already in use is 409 conflict naming auth.callback_port', async (t) => {
  const idp = await startRegistryIdp(t);
  const registry = await startProtectedRegistry(t, idp);
  const busy = createServer();
  busy.listen(0, '127.0.0.1');
  await once(busy, 'listening');
  t.after(() => new Promise<void>((resolve) => busy.close(() => resolve())));
  const port = (busy.address() as AddressInfo).port;
  const { home, ctx, tokens } = await secretsHome(t);
  const reg = service(t, home, ctx.store, tokens, {
    openUrl: () => assert.fail('no login URL without a callback'),
  });
  await reg.configure('default', {
    api_url: registry.url,
    allow_private_ip: true,
    auth: authBody(idp, { callback_port: port }),
  });
  await rejectsWith(
    reg.loginRegistry(),
    'conflict',
    new RegExp(`callback port ${port} is in use.*auth\\.callback_port`),
  );
});
