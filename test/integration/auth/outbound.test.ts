/**
 * The auth stages under the outbound address policy (`src/shared/net`): endpoints the run
 * configuration names may be on loopback (as the other auth tests' oidc-provider is), but an
 * endpoint a server's metadata points at must be public or on one of those hosts — a
 * refused one receives no connection — and link-local / metadata addresses never are.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, createServer, type Server } from 'node:net';
import { test, type TestContext } from 'node:test';
import { generateKeyPair, SignJWT } from 'jose';
import { createOidcVerifier } from '../../../src/dataplane/middleware/auth/inbound.js';
import { RemoteOAuthClient } from '../../../src/dataplane/middleware/auth/remote-oauth.js';
import { TokenExchanger } from '../../../src/dataplane/middleware/auth/token-exchange.js';
import { MemoryStorage } from '../../../src/authserver/index.js';
import type { ResolvedUpstream } from '../../../src/authserver/config.js';
import { UpstreamProvider } from '../../../src/authserver/upstream.js';
import { SkepError, silentLogger } from '../../../src/shared/index.js';

interface Listener {
  port: number;
  connections(): number;
}

/** A loopback TCP listener that counts connections and drops them. */
async function counting(t: TestContext): Promise<Listener> {
  let count = 0;
  const server: Server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, connections: () => count };
}

/** A loopback JSON server: `routes[path]` is the answer (status 200 unless given). */
async function jsonServer(
  t: TestContext,
  routes: Record<string, { status?: number; headers?: Record<string, string>; body?: unknown }>,
): Promise<{ port: number; seen: string[] }> {
  const seen: string[] = [];
  const server = createHttpServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    seen.push(`${req.method} ${path}`);
    const route = routes[path];
    if (route === undefined) return void res.writeHead(404).end();
    res
      .writeHead(route.status ?? 200, { 'content-type': 'application/json', ...route.headers })
      .end(route.body === undefined ? '' : JSON.stringify(route.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { port: (server.address() as AddressInfo).port, seen };
}

test('remote OAuth discovery does not follow metadata to an unnamed loopback host; it gets no connection', async (t) => {
  const hidden = await counting(t);
  for (const server of [`http://127.0.0.1:${hidden.port}`, 'http://169.254.169.254/']) {
    // RFC 9728 §3.1: the metadata of http://localhost:P/mcp is at /.well-known/oauth-protected-resource/mcp.
    const remote = await jsonServer(t, {
      '/.well-known/oauth-protected-resource/mcp': { body: { authorization_servers: [server] } },
    });
    const client = new RemoteOAuthClient(
      { workload: 'w', remoteUrl: `http://localhost:${remote.port}/mcp` },
      { logger: silentLogger, secrets: undefined },
    );
    t.after(() => client.close());
    await assert.rejects(client.start(), (err: unknown) => {
      assert.ok(err instanceof SkepError, String(err));
      assert.equal(err.code, 'forbidden');
      assert.match(
        err.message,
        server.includes('169.254') ? /never contacted/ : /set remote_auth_config\.issuer/,
      );
      return true;
    });
    assert.ok(
      remote.seen.includes('GET /.well-known/oauth-protected-resource/mcp'),
      'the remote server itself (named by remote_url) was asked',
    );
  }
  assert.equal(hidden.connections(), 0, 'the unnamed loopback authorization server got no connection');

  // Naming it in the configuration is the opt-in: now it is contacted.
  const remote = await jsonServer(t, {});
  const named = new RemoteOAuthClient(
    {
      workload: 'w',
      remoteUrl: `http://localhost:${remote.port}/mcp`,
      issuer: `http://127.0.0.1:${hidden.port}`,
    },
    { logger: silentLogger, secrets: undefined },
  );
  t.after(() => named.close());
  await assert.rejects(named.start());
  assert.ok(hidden.connections() > 0);
});

test('inbound JWT verification fetches no JWKS from an unnamed loopback host unless allowPrivateIP', async (t) => {
  const jwksHost = await counting(t);
  const idp = await jsonServer(t, {
    '/.well-known/openid-configuration': { body: { jwks_uri: `http://127.0.0.1:${jwksHost.port}/jwks` } },
  });
  const issuer = `http://localhost:${idp.port}`;
  const { privateKey } = await generateKeyPair('ES256');
  const token = await new SignJWT({ sub: 'alice' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(issuer)
    .setAudience('aud')
    .setExpirationTime('5m')
    .sign(privateKey);

  const guarded = createOidcVerifier({ issuer, audience: 'aud' }, {});
  await assert.rejects(guarded(token), /127\.0\.0\.1 is a loopback address; set oidc_config\.allowPrivateIP/);
  assert.ok(idp.seen.includes('GET /.well-known/openid-configuration'));
  assert.equal(jwksHost.connections(), 0, 'the JWKS host named only by discovery got no connection');

  const open = createOidcVerifier({ issuer, audience: 'aud', allowPrivateIP: true }, {});
  await assert.rejects(open(token));
  assert.ok(jwksHost.connections() > 0, 'with allowPrivateIP the JWKS is fetched');
});

test('token exchange reaches its configured endpoint, but no redirect to another loopback host or metadata', async (t) => {
  const other = await counting(t);
  const tokenServer = await jsonServer(t, {
    '/token': {
      body: {
        access_token: 'exchanged',
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        token_type: 'Bearer',
        expires_in: 60,
      },
    },
    '/moved': { status: 307, headers: { location: `http://localhost:${other.port}/token` } },
    '/metadata': { status: 307, headers: { location: 'http://169.254.169.254/latest/meta-data/' } },
  });
  const exchange = (path: string) =>
    new TokenExchanger(
      { tokenUrl: `http://127.0.0.1:${tokenServer.port}${path}` },
      { logger: silentLogger },
    ).exchange('subject-token');
  assert.equal(await exchange('/token'), 'exchanged');
  await assert.rejects(exchange('/moved'), /localhost resolves to .* loopback address/);
  await assert.rejects(exchange('/metadata'), /never contacted/);
  assert.equal(other.connections(), 0);
  await assert.rejects(
    new TokenExchanger({ tokenUrl: 'http://169.254.169.254/token' }, { logger: silentLogger }).exchange('s'),
    /never contacted/,
  );
});

test('RFC 8693 §2.2: a failed exchange is a TokenExchangeError whose code says refused (unauthorized) or unusable (bad_gateway)', async (t) => {
  const tokenServer = await jsonServer(t, {
    '/refused': { status: 400, body: { error: 'invalid_grant' } },
    '/broken': { status: 500, body: { error: 'server_error' } },
    '/untyped': { body: { access_token: 'x', token_type: 'Bearer' } },
  });
  for (const [path, code, message] of [
    ['/refused', 'unauthorized', /^token endpoint answered 400 \(invalid_grant\)$/],
    ['/broken', 'bad_gateway', /^token endpoint answered 500 \(server_error\)$/],
    ['/untyped', 'bad_gateway', /^response has no issued_token_type$/],
  ] as const) {
    await assert.rejects(
      new TokenExchanger(
        { tokenUrl: `http://127.0.0.1:${tokenServer.port}${path}` },
        { logger: silentLogger },
      ).exchange('subject-token'),
      (err: unknown) =>
        err instanceof SkepError &&
        err.name === 'TokenExchangeError' &&
        err.code === code &&
        message.test(err.message),
      path,
    );
  }
});

test('the embedded AS upstream registers (RFC 7591) only at a named or public endpoint', async (t) => {
  const hidden = await counting(t);
  const discovery = await jsonServer(t, {
    '/.well-known/oauth-authorization-server': {
      body: { registration_endpoint: `http://127.0.0.1:${hidden.port}/register` },
    },
  });
  const cfg = (allowHttp: boolean): ResolvedUpstream => ({
    name: 'corp',
    type: 'oauth2',
    clientId: undefined,
    clientSecret: undefined,
    redirectUri: 'http://localhost:9/oauth/callback',
    scopes: [],
    additionalParams: {},
    allowHttp,
    oauth2: {
      authorizationEndpoint: `http://localhost:${discovery.port}/authorize`,
      tokenEndpoint: `http://localhost:${discovery.port}/token`,
    },
    dcr: { discoveryUrl: `http://localhost:${discovery.port}/.well-known/oauth-authorization-server` },
  });
  const deps = { storage: new MemoryStorage(), now: Date.now, timeoutMs: 5_000 };
  const refused = new UpstreamProvider(cfg(false), deps);
  await assert.rejects(
    refused.authorizationUrl({ state: 's', codeVerifier: 'v'.repeat(43), nonce: 'n' }),
    /127\.0\.0\.1 is a loopback address; set insecure_allow_http on upstream "corp"/,
  );
  assert.ok(discovery.seen.some((s) => s.includes('oauth-authorization-server')));
  assert.equal(hidden.connections(), 0);

  const allowed = new UpstreamProvider(cfg(true), deps);
  await assert.rejects(allowed.authorizationUrl({ state: 's', codeVerifier: 'v'.repeat(43), nonce: 'n' }));
  assert.ok(hidden.connections() > 0, 'with insecure_allow_http the registration endpoint is contacted');
});
