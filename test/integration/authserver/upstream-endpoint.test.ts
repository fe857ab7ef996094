/**
 * The embedded authorization server sends the user's browser to its upstream provider's
 * authorization endpoint, which an OIDC provider's discovery document chooses. Only https is
 * used there (RFC 6749 §3.1), http on loopback or with `insecure_allow_http`, never another
 * scheme (`javascript:` or `file:` in a redirect: the CVE-2025-6514 class); checked before a
 * client is registered. Real discovery servers on loopback.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TestContext, test } from 'node:test';
import type { ResolvedUpstream } from '../../../src/authserver/config.js';
import { MemoryStorage } from '../../../src/authserver/index.js';
import { UpstreamProvider } from '../../../src/authserver/upstream.js';

/** An OIDC provider whose discovery document names `endpoint` for authorization; records what is asked. */
async function provider(t: TestContext, endpoint: (origin: string) => string) {
  const seen: string[] = [];
  let origin = '';
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    if (req.url !== '/.well-known/openid-configuration') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        issuer: origin,
        authorization_endpoint: endpoint(origin),
        token_endpoint: `${origin}/token`,
        jwks_uri: `${origin}/jwks`,
        registration_endpoint: `${origin}/register`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { origin, seen };
}

const upstream = (issuerUrl: string, clientId?: string): ResolvedUpstream => ({
  name: 'idp',
  type: 'oidc',
  clientId,
  clientSecret: undefined,
  redirectUri: 'http://localhost:9/oauth/callback',
  scopes: ['openid'],
  additionalParams: {},
  // The discovery server is plain http on loopback: this test opts in, so only the scheme rule is left.
  allowHttp: true,
  oidc: { issuerUrl, subjectClaim: 'sub' },
  // Without a client id the provider registers itself (RFC 7591): what the check must precede.
  ...(clientId === undefined ? { dcr: { registrationEndpoint: `${issuerUrl}/register` } } : {}),
});

const params = { state: 's'.repeat(22), codeVerifier: 'v'.repeat(43), nonce: 'n'.repeat(22) };

test('RFC 6749 §3.1: an upstream authorization_endpoint of javascript:, file: or data: is refused before registration', async (t) => {
  for (const endpoint of ['javascript:alert(document.cookie)', 'file:///usr/bin/xcalc', 'data:text/html,x']) {
    const idp = await provider(t, () => endpoint);
    const client = new UpstreamProvider(upstream(idp.origin), {
      storage: new MemoryStorage(),
      now: Date.now,
      timeoutMs: 5_000,
    });
    await assert.rejects(client.authorizationUrl(params), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'bad_gateway', endpoint);
      assert.match(
        err.message,
        /upstream provider "idp": the authorization_endpoint is refused: its scheme is/,
      );
      return true;
    });
    assert.deepEqual(idp.seen, ['GET /.well-known/openid-configuration'], `${endpoint}: no registration`);
  }
  // The control: an http endpoint of the opted-in provider is used.
  const idp = await provider(t, (origin) => `${origin}/authorize`);
  const client = new UpstreamProvider(upstream(idp.origin, 'skep'), {
    storage: new MemoryStorage(),
    now: Date.now,
    timeoutMs: 5_000,
  });
  assert.match(await client.authorizationUrl(params), new RegExp(`^${idp.origin}/authorize\\?`));
});

test('without insecure_allow_http an http authorization endpoint on another host is refused', async () => {
  const client = new UpstreamProvider(
    {
      name: 'corp',
      type: 'oauth2',
      clientId: 'skep',
      clientSecret: undefined,
      redirectUri: 'http://localhost:9/oauth/callback',
      scopes: [],
      additionalParams: {},
      allowHttp: false,
      oauth2: {
        authorizationEndpoint: 'http://idp.example.com/authorize',
        tokenEndpoint: 'https://idp.example.com/token',
      },
    },
    { storage: new MemoryStorage(), now: Date.now, timeoutMs: 5_000 },
  );
  await assert.rejects(client.authorizationUrl(params), /plain http on a host that is not loopback/);
});
