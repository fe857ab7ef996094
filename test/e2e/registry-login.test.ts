/**
 * ToolHive Studio's registry login, against a real `skep serve` (as Studio uses the registry
 * API at startup): the secrets provider set up as Studio's
 * root loader does, PUT of an API registry with `auth`, the root guard's GET answered with
 * 503 `registry_auth_required`, POST /auth/login (the user follows the URL `skep serve`
 * prints, here with an HTTP client through oidc-provider's pages), the registry listed with
 * the token, the login kept across a restart of `skep serve`, and POST /auth/logout.
 * The registry is a loopback server that checks each bearer JWT against the provider's JWKS.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { startServe, type ServeProcess } from '../helpers/cli.js';
import { tempHome } from '../helpers/home.js';
import { recordingOpener } from '../helpers/opener.js';
import { browserLogin } from '../integration/authserver/harness.js';
import {
  REGISTRY_AUDIENCE,
  REGISTRY_CLIENT_ID,
  REGISTRY_SCOPE,
  startProtectedRegistry,
  startRegistryIdp,
} from '../integration/registry/auth-harness.js';

/** Resolves with the first match of `pattern` in the process's stderr (read as it arrives). */
function stderrMatch(serve: ServeProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const found = pattern.exec(serve.stderr());
      if (found === null) return false;
      serve.child.stderr?.off('data', check);
      serve.child.off('exit', exited);
      resolve(found);
      return true;
    };
    const exited = () => reject(new Error(`skep serve exited before printing ${pattern}: ${serve.stderr()}`));
    if (check()) return;
    serve.child.stderr?.on('data', check);
    serve.child.once('exit', exited);
  });
}

/** A Studio-like client: JSON over the API with its client headers. */
function studio(serve: ServeProcess) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${serve.url}${path}`, {
      method,
      headers: {
        ...serve.auth,
        'x-client-type': 'toolhive-studio',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return {
      status: res.status,
      text,
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reads arbitrary JSON answers
      json: () => JSON.parse(text) as Record<string, any>,
    };
  };
}

function serveEnv(t: TestContext) {
  const home = tempHome(t, 'skep-registry-login-');
  // skep serve prints the login URL and gives this recording opener a page that forwards to it.
  const opener = recordingOpener(t);
  const env: NodeJS.ProcessEnv = {
    ...home.env,
    ...opener.env,
    SKEP_LOG_LEVEL: 'info',
    SKEP_SECRETS_PASSWORD: 'registry-login-e2e-password',
  };
  delete env['DISPLAY'];
  delete env['WAYLAND_DISPLAY'];
  return { home, env, opener };
}

test(
  'Studio registry login: PUT auth → 503 registry_auth_required (configured) → login → authenticated, servers listed → restart keeps the login → logout',
  { timeout: 180_000 },
  async (t) => {
    const idp = await startRegistryIdp(t);
    const registry = await startProtectedRegistry(t, idp);
    const { home, env, opener } = serveEnv(t);
    let serve = await startServe(t, env, home.config.paths.discoveryFile);
    let api = studio(serve);

    // Studio's root loader sets up the encrypted secrets provider.
    const secrets = await api('POST', '/api/v1beta/secrets', { provider_type: 'encrypted' });
    assert.equal(secrets.status, 201, secrets.text);

    // Settings → Registry → "Registry Server API" with a client ID and an issuer.
    const put = await api('PUT', '/api/v1beta/registry/default', {
      api_url: registry.url,
      allow_private_ip: true,
      auth: {
        client_id: REGISTRY_CLIENT_ID,
        issuer: idp.issuer,
        audience: REGISTRY_AUDIENCE,
        scopes: ['openid', 'offline_access', REGISTRY_SCOPE],
        callback_port: 0,
      },
    });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.json(), { type: 'api' });

    // The root guard's GET: 503 with the JSON code Studio redirects on; the body says `configured`.
    const guard = await api('GET', '/api/v1beta/registry');
    assert.equal(guard.status, 503);
    assert.equal(guard.json()['code'], 'registry_auth_required');
    assert.equal(guard.json()['auth_status'], 'configured');
    assert.equal(guard.json()['auth_type'], 'oauth');
    assert.deepEqual(guard.json()['auth_config'], {
      issuer: idp.issuer,
      client_id: REGISTRY_CLIENT_ID,
      audience: REGISTRY_AUDIENCE,
      scopes: ['openid', 'offline_access', REGISTRY_SCOPE],
    });

    // POST /auth/login answers when the user has logged in; skep serve prints the URL to open.
    const printed = stderrMatch(serve, /To authorize the registry \S+, open:\n {2}(\S+)\n/);
    const login = api('POST', '/api/v1beta/registry/auth/login');
    const url = (await printed)[1] as string;
    const authorize = new URL(url);
    assert.equal(authorize.origin, idp.issuer);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    // RFC 9700 §4.7: the opener's command line (readable by every account) holds a file path
    // only; the page, 0600, forwards to the URL with its state and PKCE challenge.
    const opened = await opener.waitForCall();
    assert.equal(opened.argv.length, 1);
    assert.match(opened.argv[0] ?? '', /^file:\/\/\/.*\/open-[0-9a-f]{32}\.html$/);
    for (const secret of [authorize.searchParams.get('state') ?? '', 'code_challenge', 'state='])
      assert.ok(!opened.argv.join(' ').includes(secret), opened.argv.join(' '));
    assert.equal(opened.mode, 0o600);
    assert.equal(opener.forwardsTo(opened), url);
    const callback = await browserLogin(url, authorize.searchParams.get('redirect_uri') as string);
    const done = await fetch(callback);
    assert.equal(done.status, 200, await done.text());
    const loggedIn = await login;
    assert.equal(loggedIn.status, 200, loggedIn.text);
    assert.deepEqual(loggedIn.json(), { status: 'authenticated' });

    // The registry page: list entry, content and servers, read with the token.
    const list = await api('GET', '/api/v1beta/registry');
    assert.equal(list.status, 200, list.text);
    const entry = list.json()['registries'][0];
    assert.equal(entry.auth_status, 'authenticated');
    assert.equal(entry.auth_type, 'oauth');
    assert.equal(entry.auth_config.client_id, REGISTRY_CLIENT_ID);
    assert.equal(entry.type, 'api');
    assert.equal(entry.server_count, registry.document.data.servers.length);
    // The detail (Studio's /registry page) carries the same auth fields, and the content.
    const detail = await api('GET', '/api/v1beta/registry/default');
    assert.equal(detail.status, 200, detail.text);
    assert.equal(detail.json()['auth_status'], 'authenticated');
    assert.deepEqual(detail.json()['auth_config'], entry.auth_config);
    assert.equal(Object.keys(detail.json()['registry'].servers).length > 0, true);
    const servers = await api('GET', '/api/v1beta/registry/default/servers');
    assert.equal(servers.status, 200);
    assert.equal(
      servers.json()['servers'].length + servers.json()['remote_servers'].length,
      registry.document.data.servers.length,
    );
    assert.equal(registry.seen.at(-1)?.claims?.['aud'], REGISTRY_AUDIENCE);
    const keys = await api('GET', '/api/v1beta/secrets/default/keys');
    assert.ok(
      (keys.json()['keys'] as { key: string }[]).some((k) => /^REGISTRY_OAUTH_[0-9a-f]{8}$/.test(k.key)),
      keys.text,
    );

    // A restart of skep serve (Studio restarts thv): the stored refresh token is used, no login.
    assert.equal(await serve.stop(), 0);
    const firstRun = serve;
    serve = await startServe(t, env, home.config.paths.discoveryFile);
    api = studio(serve);
    const status = await api('GET', '/api/v1beta/registry');
    assert.equal(status.json()['registries'][0].auth_status, 'authenticated');
    // Reloading from the registry (not the cached copy) takes a token: the stored login is used.
    const before = registry.tokens().length;
    const refreshed = await api('POST', '/api/v1beta/registry/default/refresh');
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.ok(registry.tokens().length > before, 'read with a token after the restart');
    const again = await api('GET', '/registry/default/v0.1/servers?limit=200');
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json()['metadata'].total, registry.document.data.servers.length);
    assert.doesNotMatch(serve.stderr(), /To authorize/);

    // Logout: configured again, and the registry cannot be read.
    const logout = await api('POST', '/api/v1beta/registry/auth/logout');
    assert.equal(logout.status, 200);
    assert.deepEqual(logout.json(), { status: 'logged_out' });
    const after = await api('GET', '/api/v1beta/registry');
    assert.equal(after.status, 503);
    assert.equal(after.json()['code'], 'registry_auth_required');
    assert.equal(after.json()['auth_status'], 'configured');
    const listAfter = await api('GET', '/api/v1beta/registry/default/servers');
    assert.equal(listAfter.status, 503);
    assert.equal(listAfter.json()['code'], 'registry_auth_required');

    // No token ever appeared in skep serve's output (both runs' logs).
    assert.equal(await serve.stop(), 0);
    const output = firstRun.stderr() + serve.stderr();
    assert.match(output, /registry login complete/);
    for (const token of registry.tokens()) assert.ok(!output.includes(token), 'a token in the log');
  },
);
