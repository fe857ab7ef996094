/**
 * The embedded OAuth 2.1 authorization server, written as a library that a `node:http`
 * server — normally the workload's MCP proxy — mounts: `handle(req, res)` serves the AS
 * endpoints and returns false for every other path. Login is delegated to an upstream
 * identity provider; Skep then issues its own JWT access tokens (audience = the protected
 * resource) and rotating opaque refresh tokens, and keeps the upstream tokens per session so
 * that `upstreamToken()` can inject them (refreshed when needed).
 *
 * This module routes and maps errors; each endpoint family has its module under `handlers/`
 * (metadata, authorize + consent + callback, token, registration), as the MCP SDK's
 * `server/auth/handlers/` does, over the shared plumbing of `http.ts` and `context.ts`.
 *
 * Security rules applied (OAuth 2.1, RFC 9700): PKCE S256 for every client, exact
 * redirect-URI matching, single-use codes whose replay revokes the whole grant, refresh-
 * token rotation with reuse detection, `state` returned unchanged, `iss` in the
 * authorization response (RFC 9207), `Cache-Control: no-store`, a rate limit on the token
 * and registration endpoints, constant-time comparisons, request bodies capped at 64 KiB,
 * and a consent page per client before any upstream login (`handlers/authorize.ts`).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type JWTPayload, errors as joseErrors, jwtVerify } from 'jose';
import { type Logger, normalizeOrigin, SkepError, silentLogger } from '../shared/index.js';
import type { EmbeddedAuthServerConfig } from '../schemas/index.js';
import { type ResolvedAuthServerConfig, resolveAuthServerConfig } from './config.js';
import { htmlHeaders, renderErrorPage } from './consent.js';
import { type AuthContext, storeUpstreamTokens } from './context.js';
import { BrowserCookies } from './cookies.js';
import { OAuthError } from './errors.js';
import { authorize, callback, consent } from './handlers/authorize.js';
import {
  authorizationServerMetadata,
  corsPreflight,
  jwks,
  protectedResourceMetadata,
} from './handlers/metadata.js';
import { register } from './handlers/register.js';
import { token } from './handlers/token.js';
import { expectMethod, sendOAuthError } from './http.js';
import { type KeySet, loadKeySet } from './keys.js';
import { OpaqueTokens } from './opaque-token.js';
import { type RateLimit, RateLimiter } from './rate-limit.js';
import { RedisStorage, type RedisStorageOptions } from './redis-storage.js';
import { type AuthStorage, MemoryStorage } from './storage.js';
import { UpstreamProvider } from './upstream.js';

/** Claims of a Skep access token (RFC 9068 profile; `scp` is an array). */
export interface AccessTokenClaims extends JWTPayload {
  iss: string;
  sub: string;
  aud: string[];
  exp: number;
  iat: number;
  jti: string;
  scp: string[];
  client_id: string;
  /** The session the upstream tokens are stored under. */
  tsid: string;
  name?: string;
  email?: string;
}

export interface AuthServerDeps {
  logger?: Logger;
  /** Where `*_env_var` secrets are read from. */
  env?: NodeJS.ProcessEnv;
  /** Outgoing HTTP to upstream providers. */
  fetch?: typeof fetch;
  /** Milliseconds since the epoch; tests move it. */
  now?: () => number;
  /** Overrides the configured storage (e.g. one shared by several servers in a test). */
  storage?: AuthStorage;
  redis?: RedisStorageOptions;
  /** Per client address; default 20/s with a burst of 40. */
  tokenRateLimit?: RateLimit;
  /** Per process: default 1/s with a burst of 5 (registration is open to anyone). */
  registerRateLimit?: RateLimit;
  /** Timeout of each call to an upstream provider; default 10 s. */
  upstreamTimeoutMs?: number;
}

export interface AuthServer {
  /** Serves the request when it is for the authorization server; returns false otherwise. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** Verifies a Skep access token for a resource; throws `SkepError('unauthorized')` when invalid. */
  verifyAccessToken(token: string, expectedAudience: string): Promise<AccessTokenClaims>;
  /** The upstream access token of a session (`tsid` claim) and provider, refreshed when expired. */
  upstreamToken(sessionId: string, providerName: string): Promise<string>;
  readonly issuer: string;
  close(): Promise<void>;
}

/** Refresh an upstream token this long before it expires. */
const UPSTREAM_REFRESH_SKEW_SEC = 30;
const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

type Route =
  | 'metadata'
  | 'metadata-oidc'
  | 'protected-resource'
  | 'jwks'
  | 'authorize'
  | 'consent'
  | 'callback'
  | 'token'
  | 'register';

/** The endpoints a browser visits; their errors are a page when the browser asks for HTML. */
const BROWSER_ROUTES: ReadonlySet<Route> = new Set(['authorize', 'consent', 'callback']);

function routeOf(path: string): Route | undefined {
  if (
    path === '/.well-known/oauth-authorization-server' ||
    path.startsWith('/.well-known/oauth-authorization-server/')
  )
    return 'metadata';
  if (path === '/.well-known/openid-configuration' || path.startsWith('/.well-known/openid-configuration/'))
    return 'metadata-oidc';
  if (path === PROTECTED_RESOURCE_PATH || path.startsWith(`${PROTECTED_RESOURCE_PATH}/`))
    return 'protected-resource';
  if (path === '/.well-known/jwks.json') return 'jwks';
  if (path === '/oauth/authorize') return 'authorize';
  if (path === '/oauth/consent') return 'consent';
  if (path === '/oauth/callback') return 'callback';
  if (path === '/oauth/token') return 'token';
  if (path === '/oauth/register') return 'register';
  return undefined;
}

/** The endpoints that answer one HTTP method each, and what serves them. */
const ENDPOINTS: Record<
  'authorize' | 'consent' | 'callback' | 'token' | 'register',
  {
    method: 'GET' | 'POST';
    serve(ctx: AuthContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
  }
> = {
  authorize: { method: 'GET', serve: (ctx, req, res, url) => authorize(ctx, req, url.searchParams, res) },
  consent: { method: 'POST', serve: consent },
  callback: { method: 'GET', serve: (ctx, req, res, url) => callback(ctx, req, url.searchParams, res) },
  token: { method: 'POST', serve: token },
  register: { method: 'POST', serve: register },
};

/** Serves one route; a thrown error is mapped to the OAuth response by `#fail`. */
async function dispatch(
  ctx: AuthContext,
  route: Route,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const method = req.method ?? 'GET';
  // The discovery documents are read cross-origin by browser-based clients (the JWKS is not).
  if (
    method === 'OPTIONS' &&
    (route === 'metadata' || route === 'metadata-oidc' || route === 'protected-resource')
  )
    return corsPreflight(req, res);
  switch (route) {
    case 'metadata':
    case 'metadata-oidc':
      return authorizationServerMetadata(ctx, req, res, route === 'metadata-oidc');
    case 'protected-resource':
      return protectedResourceMetadata(ctx, req, res);
    case 'jwks':
      return jwks(ctx, req, res);
    default: {
      const endpoint = ENDPOINTS[route];
      expectMethod(method, endpoint.method);
      return endpoint.serve(ctx, req, res, url);
    }
  }
}

class AuthServerImpl implements AuthServer {
  readonly issuer: string;
  readonly #ctx: AuthContext;
  readonly #storage: AuthStorage;
  readonly #ownsStorage: boolean;
  readonly #upstreams: Map<string, UpstreamProvider>;
  readonly #keys: KeySet;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #refreshing = new Map<string, Promise<string>>();
  #closed = false;

  constructor(init: {
    cfg: ResolvedAuthServerConfig;
    keys: KeySet;
    hmacSecrets: Buffer[];
    storage: AuthStorage;
    ownsStorage: boolean;
    deps: AuthServerDeps;
  }) {
    const { cfg, deps } = init;
    this.issuer = cfg.issuer;
    this.#keys = init.keys;
    this.#storage = init.storage;
    this.#ownsStorage = init.ownsStorage;
    this.#log = deps.logger ?? silentLogger;
    this.#now = deps.now ?? Date.now;
    const upstreamDeps = {
      storage: this.#storage,
      ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }),
      now: this.#now,
      timeoutMs: deps.upstreamTimeoutMs ?? 10_000,
    };
    this.#upstreams = new Map(cfg.upstreams.map((u) => [u.name, new UpstreamProvider(u, upstreamDeps)]));
    const cookies = new BrowserCookies(cfg.issuer, cfg.authorizationEndpoint);
    const now = this.#now;
    this.#ctx = {
      issuer: cfg.issuer,
      cfg,
      keys: init.keys,
      opaque: new OpaqueTokens(init.hmacSecrets),
      storage: this.#storage,
      upstreams: this.#upstreams,
      log: this.#log,
      tokenLimiter: new RateLimiter(deps.tokenRateLimit ?? { perSecond: 20, burst: 40 }, now),
      registerLimiter: new RateLimiter(deps.registerRateLimit ?? { perSecond: 1, burst: 5 }, now),
      cookies,
      consentOrigins: new Set(
        [cfg.issuer, cfg.authorizationEndpoint].map((u) => normalizeOrigin(u) as string),
      ),
      nowSec: () => Math.floor(now() / 1000),
    };
    const browserOrigin = new URL(cfg.authorizationEndpoint).origin;
    for (const u of cfg.upstreams) {
      const cb = new URL(u.redirectUri);
      const scope = cookies.path;
      const inScope = scope === '/' || cb.pathname === scope || cb.pathname.startsWith(`${scope}/`);
      if (cb.origin !== browserOrigin || !inScope)
        this.#log.warn(
          {
            upstream: u.name,
            redirect_uri: u.redirectUri,
            authorization_endpoint: cfg.authorizationEndpoint,
          },
          "the upstream redirect_uri is not on the authorization endpoint's origin and path: the browser " +
            'will not present its flow cookie there and every login will be refused; set redirect_uri to ' +
            '<authorization endpoint base>/oauth/callback',
        );
    }
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://authserver.invalid');
    const route = routeOf(url.pathname);
    if (!route) return false;
    if (this.#closed) {
      sendOAuthError(
        res,
        new OAuthError('temporarily_unavailable', 'the authorization server is shutting down', 503),
      );
      return true;
    }
    try {
      await dispatch(this.#ctx, route, req, res, url);
    } catch (err) {
      this.#fail(req, res, err, BROWSER_ROUTES.has(route));
    }
    return true;
  }

  /** The one place an endpoint's failure becomes an OAuth response (JSON, or a page for a browser). */
  #fail(req: IncomingMessage, res: ServerResponse, err: unknown, browserRoute: boolean): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    let oauthErr: OAuthError;
    if (err instanceof OAuthError) oauthErr = err;
    else if (err instanceof SkepError) {
      this.#log.warn({ code: err.code, err: err.message }, 'authorization server request failed');
      const status = err.status >= 500 ? (err.code === 'bad_gateway' ? 502 : 503) : err.status;
      const code = status >= 500 ? 'temporarily_unavailable' : 'invalid_request';
      oauthErr = new OAuthError(code, err.message, status);
    } else {
      this.#log.error({ err }, 'authorization server internal error');
      oauthErr = new OAuthError('server_error', 'internal error', 500);
    }
    // A person in a browser reads a page; a program (and every test client) gets RFC 6749 JSON.
    if (browserRoute && /\btext\/html\b/.test(String(req.headers.accept ?? ''))) {
      const { error, error_description } = oauthErr.toResponseObject();
      const html = renderErrorPage(oauthErr.status, error, error_description);
      res.writeHead(oauthErr.status, { ...htmlHeaders(undefined), ...oauthErr.headers });
      res.end(html);
      return;
    }
    sendOAuthError(res, oauthErr);
  }

  async verifyAccessToken(token: string, expectedAudience: string): Promise<AccessTokenClaims> {
    const reject = (why: string, cause?: unknown) =>
      new SkepError(
        'unauthorized',
        `access token rejected: ${why}`,
        cause === undefined ? undefined : { cause },
      );
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(
        token,
        async (header) => {
          const k = header.kid === undefined ? undefined : this.#keys.byKid.get(header.kid);
          if (!k || k.alg !== header.alg) throw reject('signed by an unknown key');
          return k.publicKey;
        },
        {
          issuer: this.issuer,
          audience: expectedAudience,
          typ: 'at+jwt',
          algorithms: [...new Set(this.#keys.all.map((k) => k.alg))],
          currentDate: new Date(this.#now()),
          requiredClaims: ['exp', 'iat', 'sub', 'jti'],
        },
      ));
    } catch (err) {
      if (err instanceof SkepError) throw err;
      if (err instanceof joseErrors.JWTExpired) throw reject('expired', err);
      if (err instanceof joseErrors.JWTClaimValidationFailed)
        throw reject(`claim "${err.claim}" is not valid`, err);
      throw reject('not a valid token from this issuer', err);
    }
    const claims = payload as AccessTokenClaims;
    if (
      typeof claims.tsid !== 'string' ||
      typeof claims.client_id !== 'string' ||
      !Array.isArray(claims.scp)
    ) {
      throw reject('missing tsid, client_id or scp');
    }
    if (await this.#storage.isSessionRevoked(claims.tsid)) throw reject('revoked');
    return claims;
  }

  async upstreamToken(sessionId: string, providerName: string): Promise<string> {
    const upstream = this.#upstreams.get(providerName);
    if (!upstream) throw new SkepError('invalid_config', `unknown upstream provider "${providerName}"`);
    // One lookup (and refresh) per (session, provider) at a time: concurrent callers share it,
    // so a rotating upstream refresh token is never spent twice.
    const key = `${sessionId}\u0000${providerName}`;
    const inflight = this.#refreshing.get(key);
    if (inflight) return inflight;
    const p = this.#currentUpstreamToken(sessionId, upstream).finally(() => this.#refreshing.delete(key));
    this.#refreshing.set(key, p);
    return p;
  }

  async #currentUpstreamToken(sessionId: string, upstream: UpstreamProvider): Promise<string> {
    const gone = () =>
      new SkepError('unauthorized', 'upstream token is no longer valid; re-authentication required');
    const rec = await this.#storage.getUpstreamTokens(sessionId, upstream.name);
    if (!rec?.access_token) throw gone();
    if (rec.expires_at === undefined || rec.expires_at > this.#ctx.nowSec() + UPSTREAM_REFRESH_SKEW_SEC) {
      return rec.access_token;
    }
    if (!rec.refresh_token) throw gone();
    try {
      const tokens = await upstream.refresh(rec.refresh_token);
      await storeUpstreamTokens(this.#ctx, sessionId, upstream.name, tokens, rec);
      return tokens.accessToken;
    } catch (err) {
      this.#log.warn(
        { provider: upstream.name, err: (err as Error).message },
        'upstream token refresh failed',
      );
      throw gone();
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsStorage) await this.#storage.close();
  }
}

/**
 * Builds the authorization server from `embedded_auth_server_config`. Reads the key files
 * and secrets, connects the storage, and warns loudly when it falls back to ephemeral keys.
 */
export async function createAuthServer(
  config: EmbeddedAuthServerConfig,
  deps: AuthServerDeps = {},
): Promise<AuthServer> {
  const cfg = resolveAuthServerConfig(config, deps.env ?? process.env);
  const log = deps.logger ?? silentLogger;
  const keys = await loadKeySet(cfg.signingKeys);
  if (keys.ephemeral) {
    log.warn(
      'DEVELOPMENT ONLY: no signing keys configured (signing_key_config); using an ephemeral key. ' +
        'Access tokens become invalid when this process restarts.',
    );
  }
  let hmacSecrets = cfg.hmacSecrets;
  if (hmacSecrets.length === 0) {
    hmacSecrets = [randomBytes(32)];
    log.warn(
      'DEVELOPMENT ONLY: no HMAC secrets configured (hmac_secret_files); using an ephemeral secret. ' +
        'Authorization codes and refresh tokens become invalid when this process restarts.',
    );
  }
  let storage = deps.storage;
  const ownsStorage = storage === undefined;
  if (!storage) {
    storage =
      cfg.storage.type === 'redis'
        ? await RedisStorage.connect(cfg.storage.redis, hmacSecrets, deps.redis ?? {})
        : new MemoryStorage(deps.now ?? Date.now);
  }
  return new AuthServerImpl({ cfg, keys, hmacSecrets, storage, ownsStorage, deps });
}
