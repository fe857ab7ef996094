/**
 * Shared pieces of the authorization-server integration tests:
 * - a real upstream OIDC provider (`oidc-provider` 9 on loopback) whose login and consent
 *   pages are driven over HTTP, as a browser would;
 * - a small `node:http` host that mounts the authorization server plus a protected `/mcp`
 *   resource that validates bearer tokens the way the proxy does and reports the injected
 *   upstream token;
 * - a real OAuth client (oauth4webapi) running register → authorize → Skep's consent page
 *   (approved) → upstream login → callback → token → refresh.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import * as oauth from 'oauth4webapi';
import Provider from 'oidc-provider';
import type { AuthServerDeps, EmbeddedAuthServerConfig } from '../../../src/authserver/index.js';
import { type AuthServer, createAuthServer } from '../../../src/authserver/index.js';

export const UPSTREAM_CLIENT_ID = 'skep-upstream';
export const UPSTREAM_CLIENT_SECRET = 'upstream-secret-for-tests-only-0123456789';
/** A resource server's client at the upstream (`startUpstream({ introspection: true })`). */
export const INTROSPECTOR_CLIENT_ID = 'resource-introspector';

/** The scopes the upstream provider grants and the embedded server asks it for. */
export const UPSTREAM_SCOPES = ['openid', 'profile', 'email', 'offline_access'];

/** A confidential client allowed RFC 8693 token exchange (`startUpstream({ exchange: true })`). */
export const EXCHANGE_CLIENT = { id: 'skep-exchanger', secret: 'exchanger-secret-for-tests-only-987654' };
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

export interface Upstream {
  issuer: string;
  provider: Provider;
  /** Token exchanges this provider granted: whose token was the subject, for which audience. */
  exchanges: Array<{ account: string; audience: string | undefined }>;
}

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Starts oidc-provider on loopback; `redirectUris` are those of the Skep AS callback. */
export async function startUpstream(
  t: TestContext,
  redirectUris: string[],
  options: {
    accessTokenTtlSec?: number;
    /**
     * RFC 7662 introspection for resource servers: the public client `INTROSPECTOR_CLIENT_ID`
     * may introspect any token (oidc-provider's default lets a public client see its own only).
     */
    introspection?: boolean;
    /**
     * RFC 8693 for `EXCHANGE_CLIENT`: the subject token must be a live access token this
     * provider issued (an opaque one, looked up in its store); the answer is a new access token
     * of this provider for the same account.
     */
    exchange?: boolean;
  } = {},
): Promise<Upstream> {
  const server = createServer();
  const port = await listen(server);
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: UPSTREAM_CLIENT_ID,
        client_secret: UPSTREAM_CLIENT_SECRET,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      ...(options.exchange
        ? [
            {
              client_id: EXCHANGE_CLIENT.id,
              client_secret: EXCHANGE_CLIENT.secret,
              grant_types: [TOKEN_EXCHANGE],
              response_types: [],
              redirect_uris: [],
              token_endpoint_auth_method: 'client_secret_basic',
            },
          ]
        : []),
      ...(options.introspection
        ? [
            {
              client_id: INTROSPECTOR_CLIENT_ID,
              grant_types: [],
              response_types: [],
              redirect_uris: [],
              token_endpoint_auth_method: 'none',
            },
          ]
        : []),
    ],
    async findAccount(_ctx: unknown, id: string) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, name: `User ${id}`, email: `${id}@example.test`, email_verified: true };
        },
      };
    },
    claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'] },
    scopes: ['openid', 'offline_access', 'profile', 'email'],
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      ...(options.introspection ? { introspection: { enabled: true, allowedPolicy: () => true } } : {}),
    },
    pkce: { required: () => true },
    ttl: { AccessToken: options.accessTokenTtlSec ?? 3600 },
    cookies: { keys: ['upstream-cookie-key-for-tests'] },
    // Offline access needs consent in oidc-provider; the tests send prompt=consent.
    issueRefreshToken: async (
      _ctx: unknown,
      client: { grantTypeAllowed(grant: string): boolean },
      code: { scopes: Set<string> },
    ) => client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
  });
  const exchanges: Upstream['exchanges'] = [];
  if (options.exchange) registerTokenExchange(provider, exchanges);
  const callback = provider.callback();
  server.on('request', callback);
  t.after(() => closeServer(server));
  return { issuer, provider, exchanges };
}

interface ExchangeContext {
  oidc: { params: Record<string, string | undefined>; client: unknown };
  status: number;
  body: unknown;
}

function registerTokenExchange(provider: Provider, exchanges: Upstream['exchanges']): void {
  const p = provider as unknown as {
    registerGrantType(name: string, handler: (ctx: ExchangeContext) => Promise<void>, params: string[]): void;
    AccessToken: {
      find(value: string): Promise<{ accountId?: string } | undefined>;
      new (fields: Record<string, unknown>): { save(): Promise<string> };
    };
  };
  p.registerGrantType(
    TOKEN_EXCHANGE,
    async (ctx) => {
      const params = ctx.oidc.params;
      const subject = await p.AccessToken.find(params['subject_token'] ?? '');
      if (params['subject_token_type'] !== ACCESS_TOKEN_TYPE || subject?.accountId === undefined) {
        ctx.status = 400;
        ctx.body = {
          error: 'invalid_grant',
          error_description: 'subject_token is not a token of this provider',
        };
        return;
      }
      exchanges.push({ account: subject.accountId, audience: params['audience'] });
      const token = new p.AccessToken({
        accountId: subject.accountId,
        client: ctx.oidc.client,
        gty: TOKEN_EXCHANGE,
        scope: 'openid',
      });
      ctx.status = 200;
      ctx.body = {
        access_token: await token.save(),
        issued_token_type: ACCESS_TOKEN_TYPE,
        token_type: 'Bearer',
        expires_in: 300,
      };
    },
    ['subject_token', 'subject_token_type', 'audience', 'scope', 'requested_token_type', 'resource'],
  );
}

export interface Host {
  url: string;
  resource: string;
  callbackUrl: string;
  server: Server;
  /** The mounted authorization server; replace it to simulate a restart with a new config. */
  auth: AuthServer | undefined;
}

/**
 * A node:http host for the authorization server (as the proxy mounts it). `/mcp` plays the
 * protected MCP endpoint: it validates the bearer token for its own URL and answers with
 * the token's subject and the upstream token that `upstreamInject` would send.
 */
export async function startHost(t: TestContext): Promise<Host> {
  const host: Host = { url: '', resource: '', callbackUrl: '', server: createServer(), auth: undefined };
  host.server.on('request', async (req: IncomingMessage, res: ServerResponse) => {
    try {
      if (host.auth && (await host.auth.handle(req, res))) return;
      if (req.url === '/mcp' && host.auth) {
        const h = req.headers.authorization ?? '';
        const token = h.startsWith('Bearer ') ? h.slice(7) : '';
        try {
          const claims = await host.auth.verifyAccessToken(token, host.resource);
          const upstream = await host.auth.upstreamToken(claims.tsid, 'idp');
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ sub: claims.sub, name: claims.name, upstream }));
        } catch (err) {
          res.writeHead(401, {
            'www-authenticate': `Bearer resource_metadata="${host.url}/.well-known/oauth-protected-resource"`,
          });
          res.end((err as Error).message);
        }
        return;
      }
      res.writeHead(404);
      res.end();
    } catch (err) {
      res.writeHead(500);
      res.end(String(err));
    }
  });
  const port = await listen(host.server);
  host.url = `http://127.0.0.1:${port}`;
  host.resource = `${host.url}/mcp`;
  host.callbackUrl = `${host.url}/oauth/callback`;
  t.after(async () => {
    await host.auth?.close();
    await closeServer(host.server);
  });
  return host;
}

/** The run-configuration block for a host and upstream (OIDC, with prompt=consent for offline access). */
export function baseConfig(host: Host, upstream: Upstream): EmbeddedAuthServerConfig {
  return {
    issuer: host.url,
    allowed_audiences: [host.resource],
    scopes_supported: UPSTREAM_SCOPES,
    upstreams: [
      {
        name: 'idp',
        type: 'oidc',
        oidc_config: {
          issuer_url: upstream.issuer,
          client_id: UPSTREAM_CLIENT_ID,
          client_secret_env_var: 'SKEP_TEST_UPSTREAM_SECRET',
          scopes: UPSTREAM_SCOPES,
          additional_authorization_params: { prompt: 'consent' },
          insecure_allow_http: true,
        },
      },
    ],
  };
}

export const TEST_ENV = { ...process.env, SKEP_TEST_UPSTREAM_SECRET: UPSTREAM_CLIENT_SECRET };

export async function mountAuthServer(
  host: Host,
  config: EmbeddedAuthServerConfig,
  deps: AuthServerDeps = {},
): Promise<AuthServer> {
  const auth = await createAuthServer(config, { env: TEST_ENV, ...deps });
  await host.auth?.close();
  host.auth = auth;
  return auth;
}

/**
 * A small cookie jar: per host name (cookies ignore ports, RFC 6265 §8.5) and path, with
 * Max-Age/Expires deletion. Enough for oidc-provider's cookies and Skep's flow and
 * "remembered" cookies; pass one jar to several logins to play one browser.
 */
export class CookieJar {
  readonly #cookies = new Map<string, { host: string; path: string; name: string; value: string }>();
  store(res: Response, url: string): void {
    const host = new URL(url).hostname;
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = (pair as string).indexOf('=');
      const name = (pair as string).slice(0, eq).trim();
      const value = (pair as string).slice(eq + 1).trim();
      const path = attrs.map((a) => /^\s*path=(.*)$/i.exec(a)?.[1]?.trim()).find(Boolean) ?? '/';
      const key = `${host} ${path} ${name}`;
      if (/max-age=0\b/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line) || value === '')
        this.#cookies.delete(key);
      else this.#cookies.set(key, { host, path, name, value });
    }
  }
  header(url: string): string {
    const { hostname, pathname } = new URL(url);
    return [...this.#cookies.values()]
      .filter(
        (c) =>
          c.host === hostname && (c.path === '/' || pathname === c.path || pathname.startsWith(`${c.path}/`)),
      )
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }
  /** Drops the cookies whose name matches (e.g. the upstream's session, to log in as someone else). */
  forget(name: RegExp): void {
    for (const [key, c] of this.#cookies) if (name.test(c.name)) this.#cookies.delete(key);
  }
  /** Names of the cookies held for a host. */
  names(host: string): string[] {
    return [...this.#cookies.values()].filter((c) => c.host === host).map((c) => c.name);
  }
}

export interface ConsentForm {
  /** Where the form posts (absolute). */
  action: string;
  flow: string;
  csrf: string;
  html: string;
}

/** Reads Skep's consent page (`<form id="skep-consent">`), or undefined when the page is another. */
export function parseConsentPage(html: string, pageUrl: string): ConsentForm | undefined {
  const form = /<form[^>]*id="skep-consent"[^>]*>/.exec(html)?.[0];
  if (!form) return undefined;
  const action = /action="([^"]+)"/.exec(form)?.[1] as string;
  const flow = /name="flow" value="([^"]+)"/.exec(html)?.[1] as string;
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] as string;
  return { action: new URL(action, pageUrl).href, flow, csrf, html };
}

export interface BrowserLoginOptions {
  /** One browser's cookies across logins (a fresh jar per login by default). */
  jar?: CookieJar;
  /** What the user answers on Skep's consent page (default: approve). */
  consent?: 'approve' | 'deny';
  /** Called with each consent page shown. */
  onConsentPage?: (page: ConsentForm) => void;
  /** The name typed at an upstream's login page (given the page's URL); default `login`. */
  loginAt?: (pageUrl: string) => string;
  /** Awaited before each request the browser makes (a test replays or forges a step there). */
  beforeHop?: (url: string, jar: CookieJar) => Promise<void>;
}

/**
 * Plays the browser: follows redirects from the authorize URL through Skep's consent page
 * (approving, as the user would, with the page's Origin) and the upstream's login and
 * consent pages (submitting their forms) until the redirect to the client's own URI.
 */
export async function browserLogin(
  authorizeUrl: string,
  clientRedirect: string,
  login = 'alice',
  options: BrowserLoginOptions = {},
): Promise<URL> {
  const jar = options.jar ?? new CookieJar();
  let url = authorizeUrl;
  let method = 'GET';
  let body: URLSearchParams | undefined;
  let origin: string | undefined;
  for (let hop = 0; hop < 30; hop++) {
    if (url.startsWith(clientRedirect)) return new URL(url);
    await options.beforeHop?.(url, jar);
    const res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: jar.header(url),
        ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...(origin ? { origin } : {}),
      },
      ...(body ? { body } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    jar.store(res, url);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url).href;
      method = 'GET';
      body = undefined;
      origin = undefined;
      await res.arrayBuffer();
      continue;
    }
    const html = await res.text();
    if (res.status !== 200)
      throw new Error(`login step ${url} answered ${res.status}: ${html.slice(0, 300)}`);
    const consent = parseConsentPage(html, url);
    if (consent) {
      options.onConsentPage?.(consent);
      origin = new URL(url).origin;
      url = consent.action;
      method = 'POST';
      body = new URLSearchParams({
        flow: consent.flow,
        csrf_token: consent.csrf,
        decision: options.consent ?? 'approve',
      });
      continue;
    }
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`no login or consent form at ${url}`);
    const name = options.loginAt?.(url) ?? login;
    url = new URL(action.replace(/&amp;/g, '&'), url).href;
    method = 'POST';
    origin = undefined;
    body =
      prompt === 'login'
        ? new URLSearchParams({ prompt, login: name, password: 'any-password' })
        : new URLSearchParams({ prompt });
  }
  throw new Error('too many redirects during login');
}

/** A browser's first step: GET the authorize URL; the answer must be Skep's consent page. */
export async function openConsentPage(
  authorizeUrl: string,
  jar: CookieJar = new CookieJar(),
): Promise<{ res: Response; form: ConsentForm; jar: CookieJar }> {
  const res = await fetch(authorizeUrl, {
    redirect: 'manual',
    headers: { cookie: jar.header(authorizeUrl) },
  });
  jar.store(res, authorizeUrl);
  const html = await res.text();
  const form = parseConsentPage(html, authorizeUrl);
  if (res.status !== 200 || !form)
    throw new Error(`expected the consent page, got ${res.status}: ${html.slice(0, 300)}`);
  return { res, form, jar };
}

/**
 * The user's answer on the consent page, POSTed as the browser does (the page's Origin and
 * cookies). `fields` and `headers` replace what a test wants to forge.
 */
export async function decideConsent(
  form: ConsentForm,
  jar: CookieJar,
  decision: 'approve' | 'deny',
  overrides: {
    fields?: Record<string, string | undefined>;
    headers?: Record<string, string | undefined>;
  } = {},
): Promise<Response> {
  const fields: Record<string, string | undefined> = {
    flow: form.flow,
    csrf_token: form.csrf,
    decision,
    ...overrides.fields,
  };
  const headers: Record<string, string | undefined> = {
    'content-type': 'application/x-www-form-urlencoded',
    origin: new URL(form.action).origin,
    cookie: jar.header(form.action),
    ...overrides.headers,
  };
  const res = await fetch(form.action, {
    method: 'POST',
    redirect: 'manual',
    headers: Object.fromEntries(
      Object.entries(headers).filter((e): e is [string, string] => e[1] !== undefined),
    ),
    body: new URLSearchParams(
      Object.fromEntries(Object.entries(fields).filter((e): e is [string, string] => e[1] !== undefined)),
    ),
  });
  jar.store(res, form.action);
  return res;
}

export interface ClientSession {
  as: oauth.AuthorizationServer;
  client: oauth.Client;
  redirectUri: string;
}

const insecure = { [oauth.allowInsecureRequests]: true } as const;

/** RFC 8414 discovery + RFC 7591 registration, as an MCP client does. */
export async function registerClient(
  host: Host,
  redirectUri = 'http://127.0.0.1:9/cb',
): Promise<ClientSession> {
  const issuer = new URL(host.url);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );
  const client = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      {
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
        client_name: 'test client',
        scope: 'openid profile email offline_access',
      },
      insecure,
    ),
  );
  return { as, client, redirectUri };
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  response: oauth.TokenEndpointResponse;
}

/** An authorization request as a client makes it (PKCE S256, its own state). */
export async function authorizationRequest(
  session: ClientSession,
): Promise<{ url: string; state: string; verifier: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(session.as.authorization_endpoint as string);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', session.client.client_id);
  url.searchParams.set('redirect_uri', session.redirectUri);
  url.searchParams.set('scope', 'openid profile offline_access');
  url.searchParams.set('state', state);
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
  url.searchParams.set('code_challenge_method', 'S256');
  return { url: url.href, state, verifier };
}

/** Authorization code + PKCE through Skep's consent page and the upstream login, then the token request. */
export async function authorize(
  session: ClientSession,
  login = 'alice',
  options: BrowserLoginOptions = {},
): Promise<Tokens> {
  const { url, state, verifier } = await authorizationRequest(session);
  const callback = await browserLogin(url, session.redirectUri, login, options);
  // Checks state and the RFC 9207 `iss` parameter.
  const params = oauth.validateAuthResponse(session.as, session.client, callback, state);
  const res = await oauth.authorizationCodeGrantRequest(
    session.as,
    session.client,
    oauth.None(),
    params,
    session.redirectUri,
    verifier,
    insecure,
  );
  const response = await oauth.processAuthorizationCodeResponse(session.as, session.client, res);
  if (!response.refresh_token) throw new Error('no refresh token issued');
  return { access_token: response.access_token, refresh_token: response.refresh_token, response };
}

export async function refresh(session: ClientSession, refreshToken: string): Promise<Tokens> {
  const res = await oauth.refreshTokenGrantRequest(
    session.as,
    session.client,
    oauth.None(),
    refreshToken,
    insecure,
  );
  const response = await oauth.processRefreshTokenResponse(session.as, session.client, res);
  if (!response.refresh_token) throw new Error('no refresh token issued on refresh');
  return { access_token: response.access_token, refresh_token: response.refresh_token, response };
}

/** Calls the protected resource with a bearer token; returns status and body. */
export async function callResource(host: Host, token: string): Promise<{ status: number; body: string }> {
  const res = await fetch(host.resource, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.text() };
}
