/**
 * The embedded OAuth 2.1 authorization server (external-auth.md §3.8), written as a library
 * that a `node:http` server — normally the workload's MCP proxy — mounts: `handle(req, res)`
 * serves the AS endpoints and returns false for every other path. Login is delegated to an
 * upstream identity provider; Skep then issues its own JWT access tokens (audience = the
 * protected resource) and rotating opaque refresh tokens, and keeps the upstream tokens per
 * session so that `upstreamToken()` can inject them (refreshed when needed).
 *
 * Security rules applied (OAuth 2.1, RFC 9700): PKCE S256 for every client, exact
 * redirect-URI matching, single-use codes whose replay revokes the whole grant, refresh-
 * token rotation with reuse detection, `state` returned unchanged, `iss` in the
 * authorization response (RFC 9207), `Cache-Control: no-store`, a rate limit on the token
 * and registration endpoints, constant-time comparisons, and request bodies capped at 64 KiB.
 *
 * Consent per client (MCP security best practices, "Confused Deputy Problem"; issue 16, F2):
 * any client may register itself (RFC 7591), and the upstream may log a user in without a
 * click, so `/oauth/authorize` never goes to the upstream on its own. It shows a consent page
 * naming the client (`consent.ts`); only an approval POSTed from that page — with its CSRF
 * token, the browser's flow cookie and, when sent, this server's Origin — stores the upstream
 * `state` and sends the browser on. The callback then honours the `state` only in the browser
 * holding that flow's cookie (`cookies.ts`), once. An approval is remembered per user and
 * client; a browser that carries the "remembered" cookie of that user skips the page for the
 * same redirect URI, scopes and resources.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type JWTPayload, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { type Logger, normalizeOrigin, SkepError, silentLogger } from '../shared/index.js';
import { AUTH_SERVER_DEFAULTS, type EmbeddedAuthServerConfig, resolveAuthServerConfig } from './config.js';
import {
  approvalCovers,
  consentResources,
  htmlHeaders,
  mergeApproval,
  redirectTarget,
  renderConsentPage,
  renderErrorPage,
} from './consent.js';
import { BrowserCookies, digest } from './cookies.js';
import { type KeySet, loadKeySet } from './keys.js';
import { OpaqueTokens } from './opaque-token.js';
import { type RateLimit, RateLimiter } from './rate-limit.js';
import { RedisStorage, type RedisStorageOptions } from './redis-storage.js';
import {
  type AuthStorage,
  type ClientRecord,
  type GrantRecord,
  MemoryStorage,
  type PendingAuthorization,
  type UpstreamTokenRecord,
} from './storage.js';
import { UpstreamProvider, type UpstreamTokens } from './upstream.js';

/** An RFC 6749 §5.2 error: `{error, error_description}` with its HTTP status. */
export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(`${error}: ${description}`);
  }
}

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
  /** Per process (external-auth.md §3.8): default 1/s with a burst of 5. */
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

const MAX_BODY_BYTES = 64 * 1024;
const DCR_CLIENT_TTL_SEC = 30 * 24 * 3600;
const INVALIDATED_CODE_REMEMBER_SEC = 30 * 60;
/** Refresh an upstream token this long before it expires. */
const UPSTREAM_REFRESH_SKEW_SEC = 30;
const VERIFIER_RE = /^[A-Za-z0-9\-._~]{43,128}$/;
const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

function randomText(bytes = 20): string {
  return randomBytes(bytes).toString('base64url');
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-content-type-options': 'nosniff',
    ...headers,
  });
  res.end(text);
}

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

function sendOAuthError(res: ServerResponse, err: OAuthError): void {
  sendJson(
    res,
    err.status,
    { error: err.error, error_description: err.description },
    { ...NO_STORE, ...err.headers },
  );
}

function redirect(
  res: ServerResponse,
  location: string,
  cookies: string[] = [],
  status: 302 | 303 = 302,
): void {
  res.writeHead(status, { location, ...NO_STORE, ...(cookies.length ? { 'set-cookie': cookies } : {}) });
  res.end();
}

/** The endpoints a browser visits; their errors are a page when the browser asks for HTML. */
const BROWSER_ROUTES = new Set(['authorize', 'consent', 'callback']);

async function readBody(req: IncomingMessage): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES)
    throw new OAuthError('invalid_request', 'request body is larger than 64 KiB', 413);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      throw new OAuthError('invalid_request', 'request body is larger than 64 KiB', 413);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** RFC 6749 §3.1: parameters must not be repeated. */
function single(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name);
  if (all.length > 1) throw new OAuthError('invalid_request', `the parameter ${name} is repeated`);
  return all[0] === '' ? undefined : all[0];
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]';
}

/** RFC 7591 / OAuth 2.1 §2.3.1: https, loopback http, or a private-use scheme; absolute, no fragment. */
function checkRedirectUri(uri: unknown): string {
  if (typeof uri !== 'string' || uri.length > 2048)
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris must be strings');
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new OAuthError('invalid_redirect_uri', `redirect URI "${uri}" is not an absolute URI`);
  }
  if (url.hash || uri.includes('#'))
    throw new OAuthError('invalid_redirect_uri', `redirect URI "${uri}" has a fragment`);
  if (url.protocol === 'https:') return uri;
  if (url.protocol === 'http:') {
    if (isLoopbackHost(url.hostname)) return uri;
    throw new OAuthError(
      'invalid_redirect_uri',
      `redirect URI "${uri}" must use https unless it is a loopback address`,
    );
  }
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/i.test(url.protocol)) return uri; // private-use scheme (RFC 8252 §7.1)
  throw new OAuthError(
    'invalid_redirect_uri',
    `redirect URI "${uri}" must use https, loopback http or a private-use scheme`,
  );
}

class AuthServerImpl implements AuthServer {
  readonly issuer: string;
  readonly #cfg: ReturnType<typeof resolveAuthServerConfig>;
  readonly #keys: KeySet;
  readonly #opaque: OpaqueTokens;
  readonly #storage: AuthStorage;
  readonly #ownsStorage: boolean;
  readonly #upstreams: Map<string, UpstreamProvider>;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #tokenLimiter: RateLimiter;
  readonly #registerLimiter: RateLimiter;
  readonly #refreshing = new Map<string, Promise<string>>();
  readonly #cookies: BrowserCookies;
  /** Origins a consent POST may come from: the issuer's and the authorization endpoint's. */
  readonly #consentOrigins: Set<string>;
  #closed = false;

  constructor(init: {
    cfg: ReturnType<typeof resolveAuthServerConfig>;
    keys: KeySet;
    hmacSecrets: Buffer[];
    storage: AuthStorage;
    ownsStorage: boolean;
    deps: AuthServerDeps;
  }) {
    const { cfg, deps } = init;
    this.issuer = cfg.issuer;
    this.#cfg = cfg;
    this.#keys = init.keys;
    this.#opaque = new OpaqueTokens(init.hmacSecrets);
    this.#storage = init.storage;
    this.#ownsStorage = init.ownsStorage;
    this.#log = deps.logger ?? silentLogger;
    this.#now = deps.now ?? Date.now;
    this.#tokenLimiter = new RateLimiter(deps.tokenRateLimit ?? { perSecond: 20, burst: 40 }, this.#now);
    this.#registerLimiter = new RateLimiter(deps.registerRateLimit ?? { perSecond: 1, burst: 5 }, this.#now);
    const upstreamDeps = {
      storage: this.#storage,
      fetch: deps.fetch ?? globalThis.fetch,
      now: this.#now,
      timeoutMs: deps.upstreamTimeoutMs ?? 10_000,
    };
    this.#upstreams = new Map(cfg.upstreams.map((u) => [u.name, new UpstreamProvider(u, upstreamDeps)]));
    this.#cookies = new BrowserCookies(cfg.issuer, cfg.authorizationEndpoint);
    this.#consentOrigins = new Set(
      [cfg.issuer, cfg.authorizationEndpoint].map((u) => normalizeOrigin(u) as string),
    );
    const browserOrigin = new URL(cfg.authorizationEndpoint).origin;
    for (const u of cfg.upstreams) {
      const cb = new URL(u.redirectUri);
      const scope = this.#cookies.path;
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

  #nowSec(): number {
    return Math.floor(this.#now() / 1000);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://authserver.invalid');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const route = this.#route(path);
    if (!route) return false;
    if (this.#closed) {
      sendOAuthError(
        res,
        new OAuthError('temporarily_unavailable', 'the authorization server is shutting down', 503),
      );
      return true;
    }
    try {
      if (route === 'protected-resource') this.#protectedResource(req, res, method);
      else if (method === 'OPTIONS' && route.startsWith('metadata')) this.#cors(req, res, 204);
      else if (route === 'metadata' || route === 'metadata-oidc') {
        this.#expect(method, 'GET');
        this.#metadata(req, res, route === 'metadata-oidc');
      } else if (route === 'jwks') {
        this.#expect(method, 'GET');
        sendJson(
          res,
          200,
          { keys: this.#keys.all.map((k) => k.publicJwk) },
          { 'cache-control': 'public, max-age=300' },
        );
      } else if (route === 'authorize') {
        this.#expect(method, 'GET');
        await this.#authorize(req, url.searchParams, res);
      } else if (route === 'consent') {
        this.#expect(method, 'POST');
        await this.#consent(req, res);
      } else if (route === 'callback') {
        this.#expect(method, 'GET');
        await this.#callback(req, url.searchParams, res);
      } else if (route === 'token') {
        this.#expect(method, 'POST');
        await this.#token(req, res);
      } else if (route === 'register') {
        this.#expect(method, 'POST');
        await this.#register(req, res);
      }
    } catch (err) {
      this.#fail(req, res, err, BROWSER_ROUTES.has(route));
    }
    return true;
  }

  #route(path: string): string | undefined {
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

  #expect(method: string, wanted: string): void {
    if (method !== wanted) throw new OAuthError('invalid_request', `use ${wanted}`, 405, { allow: wanted });
  }

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
      const error = status >= 500 ? 'temporarily_unavailable' : 'invalid_request';
      oauthErr = new OAuthError(error, err.message, status);
    } else {
      this.#log.error({ err }, 'authorization server internal error');
      oauthErr = new OAuthError('server_error', 'internal error', 500);
    }
    // A person in a browser reads a page; a program (and every test client) gets RFC 6749 JSON.
    if (browserRoute && /\btext\/html\b/.test(String(req.headers.accept ?? ''))) {
      const html = renderErrorPage(oauthErr.status, oauthErr.error, oauthErr.description);
      res.writeHead(oauthErr.status, { ...htmlHeaders(undefined), ...oauthErr.headers });
      res.end(html);
      return;
    }
    sendOAuthError(res, oauthErr);
  }

  #cors(req: IncomingMessage, res: ServerResponse, status: number): void {
    res.writeHead(status, {
      'access-control-allow-origin': typeof req.headers.origin === 'string' ? req.headers.origin : '*',
      'access-control-allow-methods': 'GET, OPTIONS',
      'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version',
      vary: 'Origin',
    });
    res.end();
  }

  /** RFC 8414 §2 (and the OIDC discovery alias, with the two fields OIDC requires). */
  #metadata(req: IncomingMessage, res: ServerResponse, oidc: boolean): void {
    const doc: Record<string, unknown> = {
      issuer: this.issuer,
      authorization_endpoint: this.#cfg.authorizationEndpoint,
      token_endpoint: `${this.issuer}/oauth/token`,
      jwks_uri: `${this.issuer}/.well-known/jwks.json`,
      registration_endpoint: `${this.issuer}/oauth/register`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      scopes_supported: this.#cfg.scopesSupported,
      authorization_response_iss_parameter_supported: true,
    };
    if (oidc) {
      doc['subject_types_supported'] = ['public'];
      doc['id_token_signing_alg_values_supported'] = [this.#keys.current.alg];
    }
    sendJson(res, 200, doc, {
      'cache-control': 'public, max-age=3600',
      'access-control-allow-origin': typeof req.headers.origin === 'string' ? req.headers.origin : '*',
    });
  }

  /** RFC 9728 protected-resource metadata for the resource this server protects. */
  #protectedResource(req: IncomingMessage, res: ServerResponse, method: string): void {
    if (method === 'OPTIONS') {
      this.#cors(req, res, 204);
      return;
    }
    this.#expect(method, 'GET');
    sendJson(
      res,
      200,
      {
        resource: this.#cfg.allowedAudiences[0],
        authorization_servers: [this.issuer],
        bearer_methods_supported: ['header'],
        scopes_supported: this.#cfg.scopesSupported,
      },
      {
        'cache-control': 'public, max-age=3600',
        'access-control-allow-origin': typeof req.headers.origin === 'string' ? req.headers.origin : '*',
        vary: 'Origin',
      },
    );
  }

  /** RFC 8707 §2: the audience of the tokens; must be one of `allowed_audiences`. */
  #audience(resources: string[], bound?: string[]): string[] {
    if (resources.length > 1)
      throw new OAuthError('invalid_target', 'Multiple resource parameters are not supported');
    const r = resources[0];
    if (r === undefined || r === '') {
      if (bound?.length) return bound;
      if (this.#cfg.allowedAudiences.length === 1) return [...this.#cfg.allowedAudiences];
      throw new OAuthError(
        'invalid_target',
        'the resource parameter is required (several audiences are allowed)',
      );
    }
    let url: URL;
    try {
      url = new URL(r);
    } catch {
      throw new OAuthError('invalid_target', `Resource "${r}" is not an absolute URI`);
    }
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash || r.includes('#')) {
      throw new OAuthError('invalid_target', `Resource "${r}" must be an http(s) URI without a fragment`);
    }
    if (!this.#cfg.allowedAudiences.includes(r)) {
      throw new OAuthError('invalid_target', `Resource "${r}" is not a registered audience`);
    }
    if (bound?.length && !bound.includes(r)) {
      throw new OAuthError('invalid_target', `Resource "${r}" was not part of the authorization`);
    }
    return [r];
  }

  async #authorize(req: IncomingMessage, q: URLSearchParams, res: ServerResponse): Promise<void> {
    const clientId = single(q, 'client_id');
    const redirectUri = single(q, 'redirect_uri');
    const client = clientId ? await this.#storage.getClient(clientId) : undefined;
    // RFC 6749 §4.1.2.1: without a known client and an exact registered redirect URI, never redirect.
    if (!client) throw new OAuthError('invalid_client', 'unknown client_id', 400);
    if (!redirectUri || !client.redirect_uris.includes(redirectUri)) {
      throw new OAuthError(
        'invalid_request',
        'redirect_uri does not exactly match a registered redirect URI',
      );
    }
    const clientState = single(q, 'state');
    const back = (error: string, description: string): void => {
      const u = new URL(redirectUri);
      u.searchParams.set('error', error);
      u.searchParams.set('error_description', description);
      if (clientState !== undefined) u.searchParams.set('state', clientState);
      u.searchParams.set('iss', this.issuer);
      redirect(res, u.href);
    };
    try {
      if (single(q, 'response_type') !== 'code')
        return back('unsupported_response_type', 'response_type must be code');
      const challenge = single(q, 'code_challenge');
      if (!challenge || !/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
        return back('invalid_request', 'PKCE is required: send a code_challenge (S256)');
      }
      if (single(q, 'code_challenge_method') !== 'S256') {
        return back('invalid_request', 'code_challenge_method must be S256');
      }
      const requested = (single(q, 'scope') ?? client.scope.join(' ')).split(' ').filter(Boolean);
      const unknown = requested.filter((s) => !client.scope.includes(s));
      if (unknown.length)
        return back('invalid_scope', `scope not registered for this client: ${unknown.join(' ')}`);
      const audience = q.getAll('resource').length ? this.#audience(q.getAll('resource')) : [];
      const upstreamName = single(q, 'upstream') ?? (this.#cfg.upstreams[0]?.name as string);
      const upstream = this.#upstreams.get(upstreamName);
      if (!upstream) return back('invalid_request', `unknown upstream "${upstreamName}"`);

      const state = randomText(20);
      const pending: PendingAuthorization = {
        clientId: client.client_id,
        redirectUri,
        clientState,
        codeChallenge: challenge,
        scopes: [...new Set(requested)],
        audience,
        upstream: upstream.name,
        upstreamVerifier: randomText(32),
        nonce: randomText(20),
        sessionId: randomUUID(),
        createdAt: this.#nowSec(),
        flowId: randomText(16),
        browserBinding: '',
      };
      const location = await upstream.authorizationUrl({
        state,
        codeVerifier: pending.upstreamVerifier,
        nonce: pending.nonce,
      });
      const resources = consentResources(pending, this.#cfg.allowedAudiences);
      // OIDC Core §3.1.2.1: prompt=consent (or login) asks for the page even when remembered.
      const prompt = (single(q, 'prompt') ?? '').split(' ');
      const remembered =
        prompt.includes('consent') || prompt.includes('login')
          ? undefined
          : await this.#rememberedApproval(req, pending, resources);
      if (remembered !== undefined) {
        this.#log.info({ client_id: client.client_id }, 'consent: remembered approval, page skipped');
        return await this.#toUpstream(
          req,
          res,
          { ...pending, rememberedUser: remembered },
          state,
          location,
          302,
        );
      }

      // The consent page. Its cookie binds the form to this browser; no upstream `state` is
      // stored until the user approves (best practices, "OAuth State Parameter Validation").
      const secret = randomText(32);
      const csrfToken = randomText(32);
      const ttl = AUTH_SERVER_DEFAULTS.pendingAuthorizationSec;
      await this.#storage.saveConsentRequest(
        pending.flowId,
        { pending: { ...pending, browserBinding: digest(secret) }, state, location, csrfToken },
        ttl,
      );
      const html = renderConsentPage({
        clientId: client.client_id,
        clientName: client.client_name,
        registeredAt: client.client_id_issued_at,
        nowSec: this.#nowSec(),
        redirectUri,
        scopes: pending.scopes,
        resources,
        upstreamHost: new URL(location).host,
        flowId: pending.flowId,
        csrfToken,
      });
      res.writeHead(200, {
        ...htmlHeaders([new URL(location).origin, redirectTarget(redirectUri).cspSource]),
        'set-cookie': this.#cookies.withFlow(req, { id: pending.flowId, secret }, ttl),
      });
      res.end(html);
    } catch (err) {
      if (err instanceof OAuthError) return back(err.error, err.description);
      if (err instanceof SkepError && err.status >= 500) {
        this.#log.warn({ err: err.message }, 'authorize: upstream or storage failure');
        return back('temporarily_unavailable', 'the identity provider or storage is unavailable; try again');
      }
      throw err;
    }
  }

  /** The user whose remembered approval covers this request in this browser, if any. */
  async #rememberedApproval(
    req: IncomingMessage,
    pending: PendingAuthorization,
    resources: string[],
  ): Promise<string | undefined> {
    for (const id of this.#cookies.rememberedIds(req)) {
      const userId = await this.#storage.getRememberedBrowser(digest(id));
      if (userId === undefined) continue;
      const approval = await this.#storage.getApproval(userId, pending.clientId);
      if (approval && approvalCovers(approval, pending, resources)) return userId;
    }
    return undefined;
  }

  /**
   * Stores the upstream `state` and sends the browser to the upstream login with a fresh
   * flow-cookie secret for this flow, set in the same response (best practices: the state
   * cookie is set immediately before the redirect, never before consent).
   */
  async #toUpstream(
    req: IncomingMessage,
    res: ServerResponse,
    pending: PendingAuthorization,
    state: string,
    location: string,
    status: 302 | 303,
  ): Promise<void> {
    const secret = randomText(32);
    const ttl = AUTH_SERVER_DEFAULTS.pendingAuthorizationSec;
    // The upstream login gets its own window, however long the consent page stayed open.
    const started = { ...pending, browserBinding: digest(secret), createdAt: this.#nowSec() };
    await this.#storage.savePending(state, started, ttl);
    redirect(res, location, [this.#cookies.withFlow(req, { id: pending.flowId, secret }, ttl)], status);
  }

  /**
   * The consent form's POST. Refused unless it carries the CSRF token of the page, comes
   * from the browser holding that page's flow cookie, and (when the browser says) from this
   * server's own origin. One decision per page.
   */
  async #consent(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const origin = req.headers.origin;
    if (origin !== undefined) {
      const normalized = normalizeOrigin(origin);
      if (normalized === undefined || !this.#consentOrigins.has(normalized)) {
        throw new OAuthError(
          'access_denied',
          `the consent form must be sent from ${[...this.#consentOrigins].join(' or ')}, not from ${origin}`,
          403,
        );
      }
    }
    const type = String(req.headers['content-type'] ?? '');
    if (!type.startsWith('application/x-www-form-urlencoded')) {
      throw new OAuthError('invalid_request', 'the consent form must be application/x-www-form-urlencoded');
    }
    const form = new URLSearchParams(await readBody(req));
    const flowId = single(form, 'flow') ?? '';
    const expired = new OAuthError(
      'invalid_request',
      'this consent page is unknown, expired or already answered; start again from your application',
    );
    const request = flowId ? await this.#storage.getConsentRequest(flowId) : undefined;
    if (!request) throw expired;
    const secret = this.#cookies.flowSecret(req, flowId);
    if (!secret || !safeEqual(digest(secret), request.pending.browserBinding)) {
      this.#log.warn(
        { client_id: request.pending.clientId },
        'consent: refused, no flow cookie of this page',
      );
      throw new OAuthError(
        'access_denied',
        'the consent must be given in the browser that opened the authorization request',
        403,
      );
    }
    if (!safeEqual(single(form, 'csrf_token') ?? '', request.csrfToken)) {
      this.#log.warn({ client_id: request.pending.clientId }, 'consent: refused, wrong CSRF token');
      throw new OAuthError('access_denied', 'the consent form is not the one this server sent', 403);
    }
    const decision = single(form, 'decision');
    if (decision !== 'approve' && decision !== 'deny') {
      throw new OAuthError('invalid_request', 'decision must be approve or deny');
    }
    const taken = await this.#storage.takeConsentRequest(flowId);
    if (!taken) throw expired;
    const { pending } = taken;
    this.#log.info({ client_id: pending.clientId, decision }, 'consent: decided');
    if (decision === 'approve') {
      return this.#toUpstream(req, res, pending, taken.state, taken.location, 303);
    }
    // RFC 6749 §4.1.2.1: the resource owner denied the request. The flow cookie goes first,
    // in this response, so the client's redirect URI never sees a live entry.
    const u = new URL(pending.redirectUri);
    u.searchParams.set('error', 'access_denied');
    u.searchParams.set('error_description', 'the user denied the request');
    if (pending.clientState !== undefined) u.searchParams.set('state', pending.clientState);
    u.searchParams.set('iss', this.issuer);
    const ttl = AUTH_SERVER_DEFAULTS.pendingAuthorizationSec;
    redirect(res, u.href, [this.#cookies.withoutFlow(req, flowId, ttl)], 303);
  }

  async #callback(req: IncomingMessage, q: URLSearchParams, res: ServerResponse): Promise<void> {
    const state = q.get('state');
    const upstreamError = q.get('error');
    if (!state) throw new OAuthError('invalid_request', 'missing state parameter');
    if (!upstreamError && !q.get('code')) throw new OAuthError('invalid_request', 'missing code parameter');
    // Single use: taken before anything else, so a refused callback cannot be tried again.
    const pending = await this.#storage.takePending(state);
    if (!pending || this.#nowSec() - pending.createdAt > AUTH_SERVER_DEFAULTS.pendingAuthorizationSec) {
      throw new OAuthError('invalid_request', 'authorization request not found or expired');
    }
    // The browser that approved (or was remembered) must be the one that comes back: a
    // callback URL replayed elsewhere, or an upstream login link handed to someone else,
    // carries no flow cookie of this flow (best practices, "OAuth State Parameter Validation").
    const secret = this.#cookies.flowSecret(req, pending.flowId);
    if (!secret || !pending.browserBinding || !safeEqual(digest(secret), pending.browserBinding)) {
      this.#log.warn(
        { client_id: pending.clientId },
        'callback: refused, not the browser that started the flow',
      );
      throw new OAuthError(
        'invalid_request',
        'this sign-in was not started in this browser (its flow cookie is missing); start again from your application',
      );
    }
    const ttl = AUTH_SERVER_DEFAULTS.pendingAuthorizationSec;
    const cookies = [this.#cookies.withoutFlow(req, pending.flowId, ttl)];
    const backToClient = (params: Record<string, string>): void => {
      const u = new URL(pending.redirectUri);
      for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
      if (pending.clientState !== undefined) u.searchParams.set('state', pending.clientState);
      u.searchParams.set('iss', this.issuer);
      redirect(res, u.href, cookies);
    };
    if (upstreamError) {
      return backToClient({
        error: 'access_denied',
        error_description: 'the identity provider refused the login',
      });
    }
    const upstream = this.#upstreams.get(pending.upstream);
    if (!upstream) throw new OAuthError('invalid_request', 'authorization request not found or expired');
    const { tokens, identity } = await upstream.exchangeCode(q, {
      state,
      codeVerifier: pending.upstreamVerifier,
      nonce: pending.nonce,
    });
    const userId = identity.synthetic
      ? identity.subject
      : await this.#storage.resolveUser(upstream.name, identity.subject);
    if (pending.rememberedUser !== undefined && pending.rememberedUser !== userId) {
      // The page was skipped for the user this browser remembered, but someone else logged in:
      // that person approved nothing. Forget the browser; the next attempt shows the page.
      this.#log.warn(
        { client_id: pending.clientId },
        'callback: remembered approval belongs to another user',
      );
      cookies.push(this.#cookies.forget());
      return backToClient({
        error: 'access_denied',
        error_description:
          "the approval remembered in this browser is another account's; sign in again to approve",
      });
    }
    await this.#storeUpstream(pending.sessionId, upstream.name, tokens, {
      user_id: userId,
      upstream_subject: identity.subject,
      client_id: pending.clientId,
      session_expires_at: this.#nowSec() + this.#cfg.refreshTokenLifespanSec,
    });

    const { token: code, signature } = this.#opaque.mint('skc');
    const record = {
      clientId: pending.clientId,
      redirectUri: pending.redirectUri,
      codeChallenge: pending.codeChallenge,
      scopes: pending.scopes,
      audience: pending.audience,
      sessionId: pending.sessionId,
      subject: userId,
      ...(identity.name === undefined ? {} : { name: identity.name }),
      ...(identity.email === undefined ? {} : { email: identity.email }),
    };
    await this.#storage.saveAuthCode(signature, record, this.#cfg.authCodeLifespanSec);
    // A synthetic subject changes with every token: there is no one to remember.
    if (!identity.synthetic) cookies.push(await this.#rememberApproval(req, userId, pending));
    backToClient({ code });
  }

  /** Records the approval for (user, client) and returns the browser's "remembered" cookie. */
  async #rememberApproval(
    req: IncomingMessage,
    userId: string,
    pending: PendingAuthorization,
  ): Promise<string> {
    const keep = AUTH_SERVER_DEFAULTS.consentRememberSec;
    const resources = consentResources(pending, this.#cfg.allowedAudiences);
    const previous = await this.#storage.getApproval(userId, pending.clientId);
    await this.#storage.saveApproval(
      userId,
      pending.clientId,
      mergeApproval(previous, pending, resources),
      keep,
    );
    let id: string | undefined;
    for (const presented of this.#cookies.rememberedIds(req)) {
      if ((await this.#storage.getRememberedBrowser(digest(presented))) === userId) id = presented;
    }
    id ??= randomText(32);
    await this.#storage.saveRememberedBrowser(digest(id), userId, keep);
    return this.#cookies.remember(id, keep);
  }

  async #storeUpstream(
    sessionId: string,
    provider: string,
    tokens: UpstreamTokens,
    meta: Pick<UpstreamTokenRecord, 'user_id' | 'upstream_subject' | 'client_id' | 'session_expires_at'>,
  ): Promise<void> {
    const record: UpstreamTokenRecord = {
      provider_id: provider,
      access_token: tokens.accessToken,
      user_id: meta.user_id,
      upstream_subject: meta.upstream_subject,
      client_id: meta.client_id,
      session_expires_at: meta.session_expires_at,
    };
    if (tokens.refreshToken) record.refresh_token = tokens.refreshToken;
    if (tokens.idToken) record.id_token = tokens.idToken;
    if (tokens.expiresAt !== undefined) record.expires_at = tokens.expiresAt;
    // Kept as long as the session may still be refreshed (external-auth.md §3.8, "upstream:" TTL).
    const ttl = Math.max(1, record.session_expires_at - this.#nowSec());
    await this.#storage.saveUpstreamTokens(sessionId, record, ttl);
  }

  async #token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const wait = this.#tokenLimiter.take(req.socket.remoteAddress ?? 'unknown');
    if (wait > 0) {
      throw new OAuthError('temporarily_unavailable', 'too many token requests; slow down', 429, {
        'retry-after': String(wait),
      });
    }
    const type = String(req.headers['content-type'] ?? '');
    if (!type.startsWith('application/x-www-form-urlencoded')) {
      throw new OAuthError('invalid_request', 'the token request must be application/x-www-form-urlencoded');
    }
    const form = new URLSearchParams(await readBody(req));
    const clientId = this.#clientIdOf(req, form);
    const client = await this.#storage.getClient(clientId);
    if (!client) throw new OAuthError('invalid_client', 'unknown client', 401);
    const grantType = single(form, 'grant_type');
    if (!grantType || !client.grant_types.includes(grantType)) {
      throw new OAuthError(
        'unauthorized_client',
        `grant_type ${grantType ?? '(missing)'} is not allowed for this client`,
      );
    }
    let body: Record<string, unknown>;
    if (grantType === 'authorization_code') body = await this.#codeGrant(client, form);
    else if (grantType === 'refresh_token') body = await this.#refreshGrant(client, form);
    else throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported`);
    await this.#storage.touchClient(client.client_id, DCR_CLIENT_TTL_SEC);
    sendJson(res, 200, body, NO_STORE);
  }

  /** Public clients identify themselves with `client_id` (in the body, or as Basic user with no secret). */
  #clientIdOf(req: IncomingMessage, form: URLSearchParams): string {
    const fromBody = single(form, 'client_id');
    const auth = req.headers.authorization;
    if (auth?.startsWith('Basic ')) {
      const decoded = Buffer.from(auth.slice(6), 'base64').toString('utf8');
      const user = decodeURIComponent(decoded.split(':')[0] ?? '');
      if (fromBody && fromBody !== user)
        throw new OAuthError('invalid_request', 'client_id differs between header and body');
      return user;
    }
    if (!fromBody) throw new OAuthError('invalid_client', 'client_id is required', 401);
    return fromBody;
  }

  /*
   * Ordering for durability (see redis-storage.ts): the new refresh token is stored (and, in
   * Sentinel mode, replicated) BEFORE the code or old refresh token is consumed. A storage
   * failure therefore leaves the presented credential unused, and the client may simply
   * retry; consuming first would burn it and turn the retry into a "replay".
   */
  async #codeGrant(client: ClientRecord, form: URLSearchParams): Promise<Record<string, unknown>> {
    const code = single(form, 'code') ?? '';
    const verifier = single(form, 'code_verifier');
    const signature = this.#opaque.verify('skc', code);
    if (!signature) throw new OAuthError('invalid_grant', 'the authorization code is invalid or expired');
    const rec = await this.#storage.getAuthCode(signature);
    if (!rec) throw new OAuthError('invalid_grant', 'the authorization code is invalid or expired');
    if (!safeEqual(rec.clientId, client.client_id)) {
      throw new OAuthError('invalid_grant', 'the code was issued to another client');
    }
    if (single(form, 'redirect_uri') !== rec.redirectUri) {
      throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
    }
    if (!verifier || !VERIFIER_RE.test(verifier)) {
      throw new OAuthError('invalid_grant', 'code_verifier is required (43-128 unreserved characters)');
    }
    if (!safeEqual(s256(verifier), rec.codeChallenge)) {
      throw new OAuthError('invalid_grant', 'PKCE verification failed');
    }
    const audience = this.#audience(form.getAll('resource'), rec.audience);
    const body = await this.#issue({ ...rec, audience });
    const consumed = await this.#storage.consumeAuthCode(signature, INVALIDATED_CODE_REMEMBER_SEC);
    if (!consumed) throw new OAuthError('invalid_grant', 'the authorization code is invalid or expired');
    if (consumed.reused) {
      // OAuth 2.1 §4.1.3 / RFC 9700 §4.5: a replayed code revokes every token issued from it.
      await this.#storage.revokeSession(rec.sessionId, this.#cfg.refreshTokenLifespanSec);
      // A leaked code: the next login of this client asks the user again.
      await this.#storage.deleteApproval(rec.subject, rec.clientId);
      this.#log.warn({ client_id: rec.clientId }, 'authorization code replay: grant revoked');
      throw new OAuthError(
        'invalid_grant',
        'the authorization code was already used; its tokens are revoked',
      );
    }
    return body;
  }

  async #refreshGrant(client: ClientRecord, form: URLSearchParams): Promise<Record<string, unknown>> {
    const signature = this.#opaque.verify('skr', single(form, 'refresh_token') ?? '');
    if (!signature) throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired');
    const rec = await this.#storage.getRefreshToken(signature);
    if (!rec) throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired');
    if (!safeEqual(rec.clientId, client.client_id)) {
      throw new OAuthError('invalid_grant', 'the refresh token was issued to another client');
    }
    if (await this.#storage.isSessionRevoked(rec.sessionId)) {
      throw new OAuthError('invalid_grant', 'the refresh token has been revoked');
    }
    const scopeParam = single(form, 'scope');
    let scopes = rec.scopes;
    if (scopeParam !== undefined) {
      const asked = scopeParam.split(' ').filter(Boolean);
      const extra = asked.filter((s) => !rec.scopes.includes(s));
      if (extra.length) {
        throw new OAuthError('invalid_scope', `scope beyond the original grant: ${extra.join(' ')}`);
      }
      scopes = asked;
    }
    const audience = this.#audience(form.getAll('resource'), rec.audience);
    const body = await this.#issue({ ...rec, scopes, audience }, rec.scopes);
    const consumed = await this.#storage.consumeRefreshToken(signature);
    if (!consumed) throw new OAuthError('invalid_grant', 'the refresh token is invalid or expired');
    if (consumed.reused) {
      // RFC 9700 §4.14.2: a rotated refresh token presented again means it leaked; end the grant.
      await this.#storage.revokeSession(rec.sessionId, this.#cfg.refreshTokenLifespanSec);
      await this.#storage.deleteApproval(rec.subject, rec.clientId);
      this.#log.warn({ client_id: rec.clientId }, 'refresh token reuse: grant revoked');
      throw new OAuthError('invalid_grant', 'the refresh token was already used; the grant is revoked');
    }
    return body;
  }

  /** Mints the access token and, when offline access was granted, a rotated refresh token. */
  async #issue(grant: GrantRecord, grantedScopes: string[] = grant.scopes): Promise<Record<string, unknown>> {
    const now = this.#nowSec();
    const key = this.#keys.current;
    const claims: Record<string, unknown> = {
      scp: grant.scopes,
      client_id: grant.clientId,
      tsid: grant.sessionId,
    };
    if (grant.name !== undefined) claims['name'] = grant.name;
    if (grant.email !== undefined) claims['email'] = grant.email;
    const accessToken = await new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(this.issuer)
      .setSubject(grant.subject)
      .setAudience(grant.audience)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + this.#cfg.accessTokenLifespanSec)
      .setJti(randomUUID())
      .sign(key.privateKey);
    const body: Record<string, unknown> = {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: this.#cfg.accessTokenLifespanSec,
      scope: grant.scopes.join(' '),
    };
    if (grantedScopes.includes('offline_access') || grantedScopes.includes('offline')) {
      const { token, signature } = this.#opaque.mint('skr');
      // The refresh token keeps the scopes of the original grant, so a narrowed refresh can widen back.
      await this.#storage.saveRefreshToken(
        signature,
        { ...grant, scopes: grantedScopes },
        this.#cfg.refreshTokenLifespanSec,
      );
      body['refresh_token'] = token;
    }
    return body;
  }

  async #register(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.#registerLimiter.take('register') > 0) {
      throw new OAuthError('temporarily_unavailable', 'too many registrations; try again shortly', 429, {
        'retry-after': '1',
      });
    }
    if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) {
      throw new OAuthError('invalid_client_metadata', 'the registration request must be application/json');
    }
    let meta: Record<string, unknown>;
    try {
      meta = JSON.parse(await readBody(req)) as Record<string, unknown>;
    } catch (err) {
      if (err instanceof OAuthError) throw err;
      throw new OAuthError('invalid_client_metadata', 'the body is not valid JSON');
    }
    if (!meta || typeof meta !== 'object' || Array.isArray(meta)) {
      throw new OAuthError('invalid_client_metadata', 'the body must be a JSON object');
    }
    const uris = meta['redirect_uris'];
    if (!Array.isArray(uris) || uris.length === 0)
      throw new OAuthError('invalid_redirect_uri', 'redirect_uris is required');
    if (uris.length > 10) throw new OAuthError('invalid_redirect_uri', 'too many redirect_uris (maximum 10)');
    const redirectUris = uris.map(checkRedirectUri);
    const name = meta['client_name'];
    if (name !== undefined && (typeof name !== 'string' || name.length > 256)) {
      throw new OAuthError(
        'invalid_client_metadata',
        'client_name must be a string of at most 256 characters',
      );
    }
    const softwareId = meta['software_id'];
    if (
      softwareId !== undefined &&
      (typeof softwareId !== 'string' || !/^[\x20-\x7e]{0,256}$/.test(softwareId))
    ) {
      throw new OAuthError(
        'invalid_client_metadata',
        'software_id must be printable ASCII of at most 256 characters',
      );
    }
    const method = meta['token_endpoint_auth_method'] ?? 'none';
    if (method !== 'none') {
      throw new OAuthError(
        'invalid_client_metadata',
        method === 'client_secret_basic' || method === 'client_secret_post'
          ? "this authorization server only supports token_endpoint_auth_method 'none'"
          : `unsupported token_endpoint_auth_method: ${String(method)}`,
      );
    }
    const grantTypes = (meta['grant_types'] ?? ['authorization_code', 'refresh_token']) as unknown;
    if (
      !Array.isArray(grantTypes) ||
      !grantTypes.includes('authorization_code') ||
      grantTypes.some((g) => g !== 'authorization_code' && g !== 'refresh_token')
    ) {
      throw new OAuthError(
        'invalid_client_metadata',
        'grant_types must include authorization_code and may add refresh_token',
      );
    }
    const responseTypes = (meta['response_types'] ?? ['code']) as unknown;
    if (!Array.isArray(responseTypes) || responseTypes.some((r) => r !== 'code')) {
      throw new OAuthError('invalid_client_metadata', 'response_types may only contain code');
    }
    const scopeText = meta['scope'] ?? this.#cfg.scopesSupported.join(' ');
    if (typeof scopeText !== 'string')
      throw new OAuthError('invalid_client_metadata', 'scope must be a string');
    const scopes = [...new Set(scopeText.split(' ').filter(Boolean))];
    for (const s of scopes) {
      if (!this.#cfg.scopesSupported.includes(s))
        throw new OAuthError('invalid_client_metadata', `unsupported scope: ${s}`);
    }
    const client: ClientRecord = {
      client_id: randomUUID(),
      client_id_issued_at: this.#nowSec(),
      redirect_uris: redirectUris,
      grant_types: [...new Set(grantTypes as string[])],
      response_types: ['code'],
      scope: scopes,
      token_endpoint_auth_method: 'none',
      ...(typeof name === 'string' ? { client_name: name } : {}),
      ...(typeof softwareId === 'string' ? { software_id: softwareId } : {}),
    };
    await this.#storage.saveClient(client, DCR_CLIENT_TTL_SEC);
    sendJson(res, 201, { ...client, scope: scopes.join(' ') }, NO_STORE);
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
    if (!upstream) throw new SkepError('bad_request', `unknown upstream provider "${providerName}"`);
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
    if (rec.expires_at === undefined || rec.expires_at > this.#nowSec() + UPSTREAM_REFRESH_SKEW_SEC) {
      return rec.access_token;
    }
    if (!rec.refresh_token) throw gone();
    try {
      const tokens = await upstream.refresh(rec.refresh_token);
      await this.#storeUpstream(sessionId, upstream.name, tokens, rec);
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
        ? await RedisStorage.connect(cfg.storage.redis, deps.redis ?? {})
        : new MemoryStorage(deps.now ?? Date.now);
  }
  return new AuthServerImpl({ cfg, keys, hmacSecrets, storage, ownsStorage, deps });
}
