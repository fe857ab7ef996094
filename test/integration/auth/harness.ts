/**
 * Real parts for the auth end-to-end tests:
 * - an identity provider: `oidc-provider` 9 on loopback, issuing JWT access tokens
 *   (client_credentials and authorization code with RFC 8707 resource indicators), with an
 *   RFC 8693 token-exchange grant added through its `registerGrantType` extension hook;
 * - a remote MCP server: the MCP SDK's streamable-HTTP server on loopback, recording every
 *   HTTP request it receives (headers and body bytes) so tests can check what reached it;
 * - Skep's proxy with the middleware pipeline built from a run configuration;
 * - a log capture, so tests can grep every log line for secret values.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { exportJWK, generateKeyPair, type JWK, jwtVerify, SignJWT } from 'jose';
import Provider from 'oidc-provider';
import { pino } from 'pino';
import { buildPipeline, type Pipeline, type StageDeps } from '../../../src/dataplane/pipeline/index.js';
import { type RunningProxy, startProxy } from '../../../src/dataplane/proxy/index.js';
import type { Logger } from '../../../src/shared/index.js';
import { parseRunConfig, type RunConfig } from '../../../src/workloads/index.js';

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** The audience of the tokens clients present to the Skep proxy. */
export const PROXY_AUDIENCE = 'https://proxy.skep.test/mcp';
export const MCP_CLIENT = { id: 'mcp-client', secret: 'mcp-client-secret-0123456789abcdef' };
export const EXCHANGER = { id: 'skep-exchanger', secret: 'exchanger-secret-fedcba9876543210' };

export async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export interface Idp {
  issuer: string;
  jwksUrl: string;
  /** Token-exchange requests the provider answered. */
  exchanges: Array<{ audience: string | undefined; scope: string | undefined; clientId: string }>;
  /** A client_credentials access token (JWT, `aud` = the resource) for the given subject claims. */
  clientToken(resource?: string): Promise<string>;
  /** Verifies a token the provider (or its exchange grant) issued, for the given audience. */
  verify(token: string, audience: string): Promise<Record<string, unknown>>;
  provider: Provider;
}

interface GrantContext {
  oidc: { params: Record<string, string | undefined>; client: { clientId: string } };
  status: number;
  body: unknown;
}

/** oidc-provider on loopback. `extraClaims` end up in client_credentials tokens (groups etc.). */
export async function startIdp(t: TestContext, extraClaims: Record<string, unknown> = {}): Promise<Idp> {
  const server = createServer();
  const issuer = await listen(server);
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'idp-key-1', alg: 'RS256', use: 'sig' };
  const exchanges: Idp['exchanges'] = [];
  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
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
        client_id: EXCHANGER.id,
        client_secret: EXCHANGER.secret,
        grant_types: [TOKEN_EXCHANGE],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    async findAccount(_ctx: unknown, id: string) {
      return { accountId: id, claims: async () => ({ sub: id }) };
    },
    scopes: ['openid', 'offline_access', 'mcp:tools'],
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => PROXY_AUDIENCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          audience: resource,
          scope: 'mcp:tools',
          accessTokenFormat: 'jwt',
          accessTokenTTL: 600,
        }),
      },
    },
    extraTokenClaims: () => extraClaims,
    pkce: { required: () => true },
    cookies: { keys: ['idp-cookie-key-for-tests'] },
    issueRefreshToken: async (
      _ctx: unknown,
      client: { grantTypeAllowed(grant: string): boolean },
      code: { scopes: Set<string> },
    ) => client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
  });
  // RFC 8693 at the provider, through its custom-grant extension hook: the subject token
  // must be one of this provider's JWTs; the new token keeps its subject and claims, names
  // the requested audience and records the exchanging client as actor (RFC 8693 §4.1).
  (
    provider as unknown as {
      registerGrantType(name: string, handler: (ctx: GrantContext) => Promise<void>, params: string[]): void;
    }
  ).registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx) => {
      const p = ctx.oidc.params;
      const fail = (description: string) => {
        ctx.status = 400;
        ctx.body = { error: 'invalid_grant', error_description: description };
      };
      if (p['subject_token_type'] !== ACCESS_TOKEN_TYPE) return fail('unsupported subject_token_type');
      let subject: Record<string, unknown>;
      try {
        ({ payload: subject } = await jwtVerify(p['subject_token'] ?? '', publicKey, { issuer }));
      } catch {
        return fail('subject_token is invalid');
      }
      exchanges.push({ audience: p['audience'], scope: p['scope'], clientId: ctx.oidc.client.clientId });
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({
        ...subject,
        scope: p['scope'],
        client_id: ctx.oidc.client.clientId,
        act: { sub: ctx.oidc.client.clientId },
      })
        .setProtectedHeader({ alg: 'RS256', kid: 'idp-key-1', typ: 'at+jwt' })
        .setIssuer(issuer)
        .setAudience(p['audience'] ?? PROXY_AUDIENCE)
        .setIssuedAt(now)
        .setExpirationTime(now + 300)
        .setJti(crypto.randomUUID())
        .sign(privateKey);
      ctx.status = 200;
      ctx.body = {
        access_token: token,
        issued_token_type: ACCESS_TOKEN_TYPE,
        token_type: 'Bearer',
        expires_in: 300,
      };
    },
    ['subject_token', 'subject_token_type', 'audience', 'scope', 'requested_token_type', 'resource'],
  );
  server.on('request', provider.callback());
  t.after(() => closeServer(server));
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    exchanges,
    provider,
    async clientToken(resource = PROXY_AUDIENCE) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${MCP_CLIENT.id}:${MCP_CLIENT.secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'mcp:tools', resource }),
      });
      const body = (await res.json()) as { access_token?: string };
      if (!res.ok || body.access_token === undefined)
        throw new Error(`token request failed: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async verify(token, audience) {
      const { payload } = await jwtVerify(token, publicKey, { issuer, audience });
      return payload;
    },
  };
}

export interface SeenRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface RemoteServer {
  url: string;
  origin: string;
  seen: SeenRequest[];
  server: Server;
  /** When set, requests without this check passing get 401 + an RFC 9728 challenge. */
  authorize?: (req: SeenRequest) => Promise<boolean>;
  /** RFC 9728 metadata the server publishes (for the remote OAuth client). */
  resourceMetadata?: Record<string, unknown>;
}

/** An MCP SDK streamable-HTTP server (stateless) with a `whoami` tool. */
export async function startRemoteMcp(t: TestContext): Promise<RemoteServer> {
  const remote: RemoteServer = { url: '', origin: '', seen: [], server: createServer() };
  remote.server.on('request', async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = req.url ?? '/';
    if (path.startsWith('/.well-known/oauth-protected-resource')) {
      if (remote.resourceMetadata === undefined) res.writeHead(404).end();
      else
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(remote.resourceMetadata));
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
    const seen: SeenRequest = { method: req.method ?? 'GET', path, headers, body };
    remote.seen.push(seen);
    if (remote.authorize !== undefined && !(await remote.authorize(seen))) {
      res
        .writeHead(401, {
          'www-authenticate': `Bearer resource_metadata="${remote.origin}/.well-known/oauth-protected-resource/mcp"`,
        })
        .end();
      return;
    }
    const mcp = new McpServer({ name: 'remote-test-server', version: '1.0.0' });
    mcp.registerTool(
      'whoami',
      { description: 'Reports the Authorization header it was called with' },
      async () => ({
        content: [{ type: 'text', text: headers['authorization'] ?? '(none)' }],
      }),
    );
    mcp.registerTool('echo', { description: 'Echoes' }, async () => ({
      content: [{ type: 'text', text: 'echo' }],
    }));
    const transport = new StreamableHTTPServerTransport({}); // stateless: no session ids;
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, body === '' ? undefined : JSON.parse(body));
  });
  remote.origin = await listen(remote.server);
  remote.url = `${remote.origin}/mcp`;
  t.after(() => closeServer(remote.server));
  return remote;
}

/** Every log line written through the returned logger, for secret greps. */
export function captureLogs(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: 'trace' }, sink), lines };
}

export interface Served {
  proxy: RunningProxy;
  chain: Pipeline;
  config: RunConfig;
}

/** Builds the chain from a run configuration and serves the remote server through the proxy. */
export async function serveThroughProxy(
  t: TestContext,
  remote: RemoteServer,
  runConfig: Record<string, unknown>,
  deps: Omit<StageDeps, 'config' | 'logger' | 'secretLookup'> & {
    logger: Logger;
    secretLookup?: StageDeps['secretLookup'];
  },
  proxyOptions: {
    toolsFilter?: string[];
    toolsOverride?: Record<string, { name?: string; description?: string }>;
  } = {},
): Promise<Served> {
  const config = parseRunConfig({
    name: 'remote-auth-test',
    image: '',
    transport: 'streamable-http',
    remote_url: remote.url,
    ...runConfig,
  });
  const chain = await buildPipeline(config, { secretLookup: async () => undefined, ...deps });
  t.after(() => chain.close());
  const proxy = await startProxy({
    port: 0,
    logger: deps.logger,
    middlewares: chain.middlewares,
    ...proxyOptions,
  });
  t.after(() => proxy.close());
  await chain.start();
  await proxy.setUpstream({ kind: 'http', url: remote.url, transport: 'streamable-http' });
  return { proxy, chain, config };
}

/**
 * An MCP SDK client through the proxy, presenting `token` (if any). `proxyUrl` is the proxy's
 * origin (the client calls its `/mcp`) or a full endpoint URL, such as a workload's working URL
 * that carries its access token.
 */
export async function connectClient(t: TestContext, proxyUrl: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'auth-e2e', version: '1.0.0' });
  const endpoint = new URL(proxyUrl);
  if (endpoint.pathname === '/') endpoint.pathname = '/mcp';
  const transport = new StreamableHTTPClientTransport(endpoint, {
    requestInit: { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

export function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('');
}
