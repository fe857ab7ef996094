/**
 * Real parts for registry authentication tests:
 * - an identity provider: oidc-provider 9 on loopback with one public native client (PKCE,
 *   no secret, loopback redirect with any port, RFC 8252 §7.3), issuing JWT access tokens for
 *   the registry's audience (RFC 8707 resource indicators) and refresh tokens;
 * - a registry that requires those tokens: a loopback HTTP server that checks the bearer JWT
 *   against the provider's JWKS (jose) and serves a v0.1 API (`/v0.1/servers`) and a registry
 *   document (`/registry.json`); it records what every request carried.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { createRemoteJWKSet, exportJWK, generateKeyPair, type JWK, jwtVerify } from 'jose';
import Provider from 'oidc-provider';
import type { RegistryDocument } from '../../../src/registry/index.js';
import { generateDocument } from '../../unit/registry/fixtures.js';

export const REGISTRY_CLIENT_ID = 'skep-registry';
export const REGISTRY_AUDIENCE = 'https://registry.skep.test';
export const REGISTRY_SCOPE = 'registry:read';

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export interface RegistryIdp {
  issuer: string;
  jwksUrl: string;
}

/** oidc-provider with the registry's public client; refresh tokens rotate (the provider's default). */
export async function startRegistryIdp(t: TestContext): Promise<RegistryIdp> {
  const server = createServer();
  const issuer = await listen(server);
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'registry-idp-1', alg: 'RS256', use: 'sig' };
  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    clients: [
      {
        client_id: REGISTRY_CLIENT_ID,
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
    ],
    async findAccount(_ctx: unknown, id: string) {
      return { accountId: id, claims: async () => ({ sub: id }) };
    },
    scopes: ['openid', 'offline_access', REGISTRY_SCOPE],
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== REGISTRY_AUDIENCE) throw new Error(`unknown resource ${resource}`);
          return { audience: resource, scope: REGISTRY_SCOPE, accessTokenFormat: 'jwt', accessTokenTTL: 600 };
        },
      },
    },
    pkce: { required: () => true },
    cookies: { keys: ['registry-idp-cookie-key-for-tests'] },
    // Many providers issue a refresh token without `prompt=consent`; this one does too.
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(grant: string): boolean }) =>
      client.grantTypeAllowed('refresh_token'),
  });
  server.on('request', provider.callback());
  t.after(() => closeServer(server));
  return { issuer, jwksUrl: `${issuer}/jwks` };
}

export interface SeenRegistryRequest {
  path: string;
  authorization: string | undefined;
  /** The verified token's claims, when it had a valid one. */
  claims?: Record<string, unknown>;
}

export interface ProtectedRegistry {
  url: string;
  document: RegistryDocument;
  seen: SeenRegistryRequest[];
  /** Bearer tokens that passed the check, in order. */
  tokens(): string[];
  /** When set, `/moved.json` answers 302 to this URL (a redirect to another origin). */
  redirectTo?: string;
  /** False: requests without a token are served too (a registry before it turned on auth). */
  requireToken: boolean;
}

/**
 * A registry that answers only requests carrying a JWT of `idp` for `REGISTRY_AUDIENCE`;
 * anything else gets 401 with an RFC 6750 challenge.
 */
export async function startProtectedRegistry(
  t: TestContext,
  idp: RegistryIdp,
  document: RegistryDocument = generateDocument(5, 2, 7),
): Promise<ProtectedRegistry> {
  const jwks = createRemoteJWKSet(new URL(idp.jwksUrl));
  const seen: SeenRegistryRequest[] = [];
  const registry: ProtectedRegistry = {
    url: '',
    document,
    seen,
    requireToken: true,
    tokens: () =>
      seen.filter((s) => s.claims !== undefined).map((s) => (s.authorization ?? '').replace(/^Bearer /, '')),
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const path = req.url ?? '/';
      const authorization = req.headers['authorization'];
      const entry: SeenRegistryRequest = { path, authorization };
      seen.push(entry);
      try {
        const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
        if (token === undefined) throw new Error('no bearer token');
        const { payload } = await jwtVerify(token, jwks, { issuer: idp.issuer, audience: REGISTRY_AUDIENCE });
        entry.claims = payload;
      } catch {
        if (!registry.requireToken) return serve();
        res
          .writeHead(401, {
            'www-authenticate': 'Bearer realm="registry"',
            'content-type': 'application/json',
          })
          .end('{"error":"unauthorized"}');
        return;
      }
      serve();
    })();
    function serve(): void {
      const path = req.url ?? '/';
      const json = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const pathname = new URL(path, 'http://x').pathname;
      if (pathname === '/registry.json') return void json(200, document);
      if (pathname === '/moved.json' && registry.redirectTo !== undefined) {
        res.writeHead(302, { location: registry.redirectTo }).end();
        return;
      }
      if (pathname === '/v0.1/servers') {
        const servers = document.data.servers;
        return void json(200, { servers, metadata: { total: servers.length, page: 1, limit: 100 } });
      }
      if (pathname === '/v0.1/x/dev.toolhive/skills') {
        const skills = document.data.skills ?? [];
        return void json(200, { skills, metadata: { total: skills.length, page: 1, limit: 100 } });
      }
      json(404, { code: 'not_found', message: `no route ${pathname}` });
    }
  });
  registry.url = await listen(server);
  t.after(() => closeServer(server));
  return registry;
}
