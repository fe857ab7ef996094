/**
 * Inbound auth with RFC 7662 token introspection, end to end through real parts: a real
 * `oidc-provider` 9 on loopback issuing OPAQUE access tokens (client_credentials, RFC 8707
 * resource indicators) with its introspection (RFC 7662) and revocation (RFC 7009) endpoints
 * enabled; Skep's proxy with the auth chain built from a run configuration whose
 * `oidc_config` names `introspectionURL` + `clientID`/`clientSecret`; and the MCP SDK
 * streamable-HTTP server behind it, recording what reaches it.
 *
 * The clock passed to the chain is the real clock plus an offset the tests can move forward,
 * so the RFC 7662 §4 cache window is crossed without sleeping.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { decodeProtectedHeader } from 'jose';
import Provider from 'oidc-provider';
import {
  captureLogs,
  closeServer,
  connectClient,
  listen,
  MCP_CLIENT,
  PROXY_AUDIENCE,
  type RemoteServer,
  serveThroughProxy,
  startRemoteMcp,
} from './harness.js';
import { definedOnly } from '../../../src/shared/index.js';

const OTHER_AUDIENCE = 'https://other.skep.test/mcp';
/** The resource server's own credentials at the provider: used only to introspect. */
const INTROSPECTOR = { id: 'skep-introspector', secret: 'introspector-secret-5e6f7a8b9c0d1e2f' };

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
}

interface OpaqueIdp {
  issuer: string;
  introspectionUrl: string;
  /** Every request to the introspection endpoint: its Authorization header. */
  introspections: Array<{ authorization: string | undefined }>;
  /** A client_credentials access token (opaque, bound to `resource`). */
  clientToken(resource?: string): Promise<string>;
  /** RFC 7009 revocation by the client the token was issued to. */
  revoke(token: string): Promise<void>;
  /** Introspects directly (as the resource server would), to show what the provider answers. */
  introspect(token: string): Promise<Record<string, unknown>>;
  /** Extra claims stored with the next tokens; the introspection response returns them. */
  extraClaims: Record<string, unknown>;
}

async function startOpaqueIdp(t: TestContext): Promise<OpaqueIdp> {
  const server = createServer();
  const issuer = await listen(server);
  const idp = { extraClaims: {} as Record<string, unknown> };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: MCP_CLIENT.id,
        client_secret: MCP_CLIENT.secret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        // A resource server: no grants, it only authenticates to introspect.
        client_id: INTROSPECTOR.id,
        client_secret: INTROSPECTOR.secret,
        grant_types: [],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    scopes: ['mcp:tools'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // Only the resource server may learn about tokens (RFC 7662 §4: the endpoint
        // requires authorization).
        allowedPolicy: async (_ctx: unknown, client: { clientId: string }) =>
          client.clientId === INTROSPECTOR.id,
      },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) =>
          client.clientId === token.clientId,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => PROXY_AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          audience: resource,
          scope: 'mcp:tools',
          accessTokenFormat: 'opaque',
          accessTokenTTL: 600,
        }),
      },
    },
    extraTokenClaims: () => idp.extraClaims,
    cookies: { keys: ['idp-cookie-key-for-introspection-tests'] },
  });
  const introspectionUrl = `${issuer}/token/introspection`;
  const introspections: OpaqueIdp['introspections'] = [];
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.method === 'POST' && req.url === '/token/introspection')
      introspections.push({ authorization: req.headers.authorization });
    void callback(req, res);
  });
  t.after(() => closeServer(server));

  const post = async (path: string, authorization: string, form: Record<string, string>) =>
    fetch(`${issuer}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
      body: new URLSearchParams(form),
    });
  return Object.assign(idp, {
    issuer,
    introspectionUrl,
    introspections,
    async clientToken(resource = PROXY_AUDIENCE) {
      const res = await post('/token', basic(MCP_CLIENT.id, MCP_CLIENT.secret), {
        grant_type: 'client_credentials',
        scope: 'mcp:tools',
        resource,
      });
      const body = (await res.json()) as { access_token?: string };
      if (!res.ok || body.access_token === undefined)
        throw new Error(`token request failed: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async revoke(token) {
      const res = await post('/token/revocation', basic(MCP_CLIENT.id, MCP_CLIENT.secret), {
        token,
        token_type_hint: 'access_token',
      });
      if (res.status !== 200) throw new Error(`revocation answered ${res.status}: ${await res.text()}`);
    },
    async introspect(token) {
      const res = await post('/token/introspection', basic(INTROSPECTOR.id, INTROSPECTOR.secret), { token });
      if (res.status !== 200) throw new Error(`introspection answered ${res.status}`);
      return (await res.json()) as Record<string, unknown>;
    },
  } satisfies Omit<OpaqueIdp, 'extraClaims'>);
}

/** A settable clock for the chain: real time plus `advance(ms)`. */
function movableClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms: number) {
      offset += ms;
    },
  };
}

/** `checks: false` leaves out issuer and audience: only the endpoint's `active` decides. */
function introspectionConfig(idp: OpaqueIdp, clientSecret: string, checks = true) {
  return {
    ...(checks ? { issuer: idp.issuer, audience: PROXY_AUDIENCE } : {}),
    introspectionURL: idp.introspectionUrl,
    clientID: INTROSPECTOR.id,
    clientSecret,
    insecureAllowHTTP: true,
    resourceURL: PROXY_AUDIENCE,
  };
}

/**
 * The setup every test here shares: the provider, the MCP server, and the proxy in front of it
 * whose chain introspects with `clientSecret` (a value, or a secret reference `secretLookup`
 * resolves), logging into `lines`, on a clock the test can move.
 */
async function introspectingProxy(
  t: TestContext,
  options: {
    clientSecret?: string;
    checks?: boolean;
    secretLookup?: (name: string) => Promise<string | undefined>;
  } = {},
) {
  const idp = await startOpaqueIdp(t);
  const remote = await startRemoteMcp(t);
  const { logger, lines } = captureLogs();
  const clock = movableClock();
  const { proxy, chain, config } = await serveThroughProxy(
    t,
    remote,
    {
      oidc_config: introspectionConfig(
        idp,
        options.clientSecret ?? INTROSPECTOR.secret,
        options.checks ?? true,
      ),
    },
    {
      logger,
      now: clock.now,
      ...definedOnly({ secretLookup: options.secretLookup }),
    },
  );
  return { idp, remote, proxy, chain, config, lines, clock };
}

/** One raw MCP request through the proxy, so status and challenge can be inspected. */
async function ping(proxyUrl: string, token?: string): Promise<Response> {
  return fetch(`${proxyUrl}/mcp`, {
    method: 'POST',
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
}

/** RFC 6750 §3 / RFC 9728 §5.1: a 401 with a Bearer challenge naming the error and the metadata. */
async function assertInvalidToken(res: Response, what: string): Promise<void> {
  assert.equal(res.status, 401, `${what}: status`);
  await res.arrayBuffer();
  const challenge = res.headers.get('www-authenticate') ?? '';
  assert.match(challenge, /^Bearer /, `${what}: Bearer challenge`);
  assert.match(challenge, /error="invalid_token"/, `${what}: RFC 6750 §3.1 invalid_token`);
  assert.match(
    challenge,
    /resource_metadata="https:\/\/proxy\.skep\.test\/\.well-known\/oauth-protected-resource\/mcp"/,
    `${what}: RFC 9728 resource_metadata`,
  );
}

function isJwt(token: string): boolean {
  try {
    decodeProtectedHeader(token);
    return true;
  } catch {
    return false;
  }
}

/** How many HTTP requests reached the MCP server behind the proxy. */
function reached(remote: RemoteServer): number {
  return remote.seen.length;
}

test(
  'RFC 7662 §2.1/§2.2: an opaque token the endpoint calls active is accepted and the request reaches the MCP server; the resource server authenticates with its client credentials; §4 caching bounds the round trips',
  { timeout: 60_000 },
  async (t) => {
    const secrets = new Map([['introspector-secret', INTROSPECTOR.secret]]);
    const { idp, remote, proxy, chain, config, lines, clock } = await introspectingProxy(t, {
      clientSecret: 'introspector-secret,target=oidc_client_secret',
      secretLookup: async (name) => secrets.get(name),
    });
    assert.deepEqual(chain.names, ['auth']);

    const token = await idp.clientToken();
    assert.ok(!isJwt(token), 'the provider issued an opaque (non-JWT) access token');
    assert.equal(token.split('.').length, 1);

    const client = await connectClient(t, proxy.url, token);
    const tools = await client.listTools();
    assert.deepEqual(tools.tools.map((x) => x.name).sort(), ['echo', 'whoami']);
    await client.callTool({ name: 'echo', arguments: {} });
    assert.ok(reached(remote) >= 3, 'initialize, tools/list and tools/call reached the server');

    // RFC 7662 §2.1: the protected resource authenticated to the introspection endpoint (Basic,
    // as the configured client) — and, with §4 caching, once for all those requests.
    assert.deepEqual(idp.introspections, [{ authorization: basic(INTROSPECTOR.id, INTROSPECTOR.secret) }]);

    // Past the cache window the token is introspected again and still accepted.
    clock.advance(61_000);
    const again = await ping(proxy.url, token);
    assert.equal(again.status, 200, await again.text());
    assert.equal(idp.introspections.length, 2);

    const log = lines.join('');
    assert.ok(lines.length > 0, 'the proxy logged something');
    assert.ok(!log.includes(INTROSPECTOR.secret), 'the introspection client secret is not logged');
    assert.ok(!log.includes(token), 'the access token is not logged');
    assert.ok(
      !JSON.stringify(config).includes(INTROSPECTOR.secret),
      'the run configuration holds the reference',
    );
  },
);

test(
  'RFC 7662 §2.2 active=false: a token revoked through RFC 7009 and a random string get 401 with an RFC 6750 invalid_token challenge; nothing reaches the MCP server',
  { timeout: 60_000 },
  async (t) => {
    // Without issuer/audience checks, so the rejection comes from `active` alone.
    const { idp, remote, proxy, lines } = await introspectingProxy(t, { checks: false });

    const revoked = await idp.clientToken();
    await idp.revoke(revoked);
    assert.deepEqual(await idp.introspect(revoked), { active: false }, 'the provider calls it inactive');
    await assertInvalidToken(await ping(proxy.url, revoked), 'revoked token');

    const random = randomBytes(32).toString('base64url');
    await assertInvalidToken(await ping(proxy.url, random), 'random string');

    // A JWT-shaped string the introspection endpoint refuses (400) is rejected the same way.
    const fakeJwt = `${Buffer.from('{"alg":"none"}').toString('base64url')}.e30.`;
    await assertInvalidToken(await ping(proxy.url, fakeJwt), 'unsigned JWT-shaped string');

    // RFC 6750 §3.1: no credentials → a challenge without an error code.
    const anonymous = await ping(proxy.url);
    assert.equal(anonymous.status, 401);
    assert.doesNotMatch(anonymous.headers.get('www-authenticate') ?? '', /error=/);

    assert.equal(reached(remote), 0, 'nothing reached the MCP server');
    assert.ok(idp.introspections.length >= 2, 'the proxy asked the introspection endpoint');
    const log = lines.join('');
    assert.match(log, /inbound token rejected/);
    for (const value of [INTROSPECTOR.secret, revoked, random])
      assert.ok(!log.includes(value), 'no secret or token in the logs');
  },
);

test(
  'RFC 7662 §4 caching trade-off: a token revoked after use is still served from the cache inside the 60 s window, and rejected with 401 once it ends',
  { timeout: 60_000 },
  async (t) => {
    const { idp, remote, proxy, lines, clock } = await introspectingProxy(t);
    const token = await idp.clientToken();
    const first = await ping(proxy.url, token);
    assert.equal(first.status, 200, await first.text());
    const seenBefore = reached(remote);
    assert.equal(seenBefore, 1);

    await idp.revoke(token);
    // Inside the window the cached active answer is reused: no new introspection.
    clock.advance(30_000);
    const cached = await ping(proxy.url, token);
    assert.equal(cached.status, 200, await cached.text());
    assert.equal(idp.introspections.length, 1);
    const seenCached = reached(remote);
    clock.advance(31_000);
    await assertInvalidToken(await ping(proxy.url, token), 'revoked after use, past the cache window');
    assert.equal(reached(remote), seenCached, 'the rejected request did not reach the MCP server');
    assert.equal(idp.introspections.length, 2);
    assert.ok(!lines.join('').includes(INTROSPECTOR.secret));
  },
);

test(
  'RFC 7662 §2.2 aud: an active token issued for another resource is rejected (audience check), and a token for this resource is accepted',
  { timeout: 60_000 },
  async (t) => {
    const { idp, remote, proxy, lines } = await introspectingProxy(t);
    const foreign = await idp.clientToken(OTHER_AUDIENCE);
    const answer = await idp.introspect(foreign);
    assert.equal(answer['active'], true, 'the token itself is valid');
    assert.equal(answer['aud'], OTHER_AUDIENCE, 'the provider returns the audience');
    await assertInvalidToken(await ping(proxy.url, foreign), 'wrong audience');
    assert.equal(reached(remote), 0);
    assert.match(lines.join(''), /unexpected audience/);

    const own = await idp.clientToken();
    assert.equal((await idp.introspect(own))['aud'], PROXY_AUDIENCE);
    const ok = await ping(proxy.url, own);
    assert.equal(ok.status, 200, await ok.text());
    assert.equal(reached(remote), 1);
    assert.ok(!lines.join('').includes(INTROSPECTOR.secret));
  },
);

test(
  'RFC 7662 §2.1: with a wrong introspection client secret the endpoint refuses the proxy, every token is rejected with 401, and the secret is not logged',
  { timeout: 60_000 },
  async (t) => {
    const wrongSecret = 'wrong-introspector-secret-77aa88bb';
    const { idp, remote, proxy, lines } = await introspectingProxy(t, { clientSecret: wrongSecret });
    const token = await idp.clientToken();
    await assertInvalidToken(await ping(proxy.url, token), 'valid token, unauthenticated introspection');
    assert.equal(reached(remote), 0);
    assert.equal(idp.introspections.length, 1);
    const log = lines.join('');
    assert.match(log, /introspection answered 401/);
    for (const value of [wrongSecret, INTROSPECTOR.secret, token])
      assert.ok(!log.includes(value), 'no secret or token in the logs');
  },
);

test(
  'RFC 7662 §2.2 nbf: an active token whose nbf is still ahead is rejected with 401, and accepted once the clock passes it',
  { timeout: 60_000 },
  async (t) => {
    const { idp, remote, proxy, lines, clock } = await introspectingProxy(t);
    // The token lives 600 s; it may be used only from 300 s on.
    idp.extraClaims = { nbf: Math.floor(Date.now() / 1000) + 300 };
    const early = await idp.clientToken();
    const answer = await idp.introspect(early);
    assert.equal(answer['active'], true);
    assert.equal(answer['nbf'], idp.extraClaims['nbf'], 'the provider returns nbf');
    await assertInvalidToken(await ping(proxy.url, early), 'used before nbf');
    assert.equal(reached(remote), 0);
    assert.match(lines.join(''), /not yet valid/);

    clock.advance(301_000);
    const later = await ping(proxy.url, early);
    assert.equal(later.status, 200, await later.text());
    assert.equal(reached(remote), 1);
  },
);
