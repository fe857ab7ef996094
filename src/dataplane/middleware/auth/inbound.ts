/**
 * Inbound authentication (`oidc_config`): every client request must carry a bearer token that
 * is either a JWT signed by a key of the issuer's JWKS (fetched once, cached, re-fetched when
 * an unknown `kid` shows up, so key rotation needs no restart) or, for opaque tokens, one the
 * RFC 7662 introspection endpoint calls active. Issuer and audience are checked in both
 * cases. A missing or rejected token gets a 401 whose RFC 6750 challenge points at the
 * RFC 9728 protected-resource metadata, which this middleware also serves.
 *
 * For an issuer inside a cluster (the Kubernetes API server, whose JWKS is readable only with a
 * service-account token and whose certificate is signed by the cluster's own authority),
 * `cacertPath` adds that authority and `authTokenFile` sends the file's token as bearer to the
 * hosts the configuration names; `kubernetesServiceAccount` then accepts only the tokens of one
 * namespace or one service account (their `sub` is `system:serviceaccount:<namespace>:<name>`).
 */
import { readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates } from 'node:tls';
import { createRemoteJWKSet, customFetch, decodeProtectedHeader, jwtVerify } from 'jose';
import { discoverJwksUri, introspectToken, OAuthResponseError } from '../../../protocol/oauth/index.js';
import type {
  ProxyMiddleware,
  ProxyMiddlewareResult,
  ProxyRequestContext,
  PublicView,
} from '../../proxy/index.js';
import {
  definedOnly,
  isLoopbackUrl,
  type Logger,
  OutboundClient,
  outboundFetch,
  SkepError,
} from '../../../shared/index.js';
import { ExpiringCache } from './expiring-cache.js';
import { bearerFrom, challenge, configuredEndpointsPolicy, type FetchLike, sha256Hex } from './http.js';

export interface InboundAuthOptions {
  /** Expected `iss`; also where the JWKS is discovered when `jwksUrl` is not given. */
  issuer?: string;
  /** Expected `aud` (one of the token's audiences). */
  audience?: string;
  jwksUrl?: string;
  /** RFC 7662 endpoint for opaque tokens. */
  introspectionUrl?: string;
  clientId?: string;
  clientSecret?: string;
  /** The protected resource (RFC 9728 `resource`), e.g. the workload URL. */
  resourceUrl?: string;
  scopes?: string[];
  /** Allow an http:// issuer/JWKS outside loopback (tests, private networks); also allows private addresses. */
  allowHttp?: boolean;
  /**
   * `oidc_config.allowPrivateIP`: discovered endpoints (the JWKS) may be on any loopback or
   * private host, not only on the hosts the configuration names.
   */
  allowPrivateIP?: boolean;
  /** `oidc_config.cacertPath`: PEM file of an authority trusted, besides Node's, for the issuer's endpoints. */
  caCertPath?: string;
  /**
   * `oidc_config.authTokenFile`: a file whose content is sent as bearer token to discovery and the
   * JWKS. Read again on every fetch: a projected service-account token is rotated in place.
   */
  authTokenFile?: string;
  /** The field that named `authTokenFile`, for errors (default `oidc_config.authTokenFile`). */
  authTokenField?: string;
  /** `oidc_config.kubernetesServiceAccount`: accept only this namespace's (or account's) tokens. */
  serviceAccount?: { namespace: string; name?: string };
}

/** Verifies a token and returns its claims, or throws (any error = reject). */
export type TokenVerifier = (token: string) => Promise<Record<string, unknown>>;

const METADATA_PATH = '/.well-known/oauth-protected-resource';
/** The request headers a document that follows the client's view depends on (`public-view.ts`). */
const FORWARDED_HEADERS = 'X-Forwarded-Prefix, X-Forwarded-Proto, X-Forwarded-Host, X-Forwarded-Port';
/** Positive introspection results are reused at most this long (RFC 7662 §4 allows caching). */
const INTROSPECTION_CACHE_MS = 60_000;
/** Tolerated clock difference with the issuer, seconds. */
const CLOCK_TOLERANCE_SEC = 30;

function checkUrl(value: string, field: string, allowHttp: boolean): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SkepError('invalid_config', `${field}: "${value}" is not an absolute URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (isLoopbackUrl(url) || allowHttp))) {
    throw new SkepError(
      'invalid_config',
      `${field}: use https (http only for loopback or with insecureAllowHTTP)`,
    );
  }
  return url;
}

/** Builds the JWT/introspection verifier for `oidc_config`. */
export function createOidcVerifier(
  options: InboundAuthOptions,
  deps: { fetch?: FetchLike; now?: () => number },
): TokenVerifier {
  const allowHttp = options.allowHttp === true;
  // Discovery, the JWKS (jose's own fetch otherwise) and introspection go through the
  // outbound address policy (`src/shared/net`).
  const policy = configuredEndpointsPolicy([options.issuer, options.jwksUrl, options.introspectionUrl], {
    allowPrivate: allowHttp || options.allowPrivateIP === true,
    hint: 'set oidc_config.allowPrivateIP to use identity-provider endpoints on other private hosts',
  });
  const now = deps.now ?? Date.now;
  if (
    options.issuer === undefined &&
    options.jwksUrl === undefined &&
    options.introspectionUrl === undefined
  ) {
    throw new SkepError('invalid_config', 'oidc_config: set issuer, jwksurl or introspectionURL');
  }
  if (options.issuer !== undefined) checkUrl(options.issuer, 'oidc_config.issuer', allowHttp);
  if (options.jwksUrl !== undefined) checkUrl(options.jwksUrl, 'oidc_config.jwksurl', allowHttp);
  if (options.introspectionUrl !== undefined)
    checkUrl(options.introspectionUrl, 'oidc_config.introspectionURL', allowHttp);
  // With `cacertPath`, a client of its own (its pools live as long as the runner's pipeline).
  const fetchFn = withAuthToken(
    deps.fetch ??
      (options.caCertPath === undefined
        ? outboundFetch(policy)
        : new OutboundClient({ ca: [...rootCertificates, readCaBundle(options.caCertPath)] }).fetcher(
            policy,
          )),
    options,
  );

  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  let discovering: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
  const keySet = async () => {
    if (jwks !== undefined) return jwks;
    discovering ??= (async () => {
      let url = options.jwksUrl;
      if (url === undefined) {
        // OpenID Connect Discovery 1.0 §4 (RFC 8414 §3 for plain OAuth servers).
        const discovered = await discoverJwksUri(options.issuer as string, fetchFn);
        if (discovered === undefined) throw new Error('the issuer publishes no jwks_uri');
        url = checkUrl(discovered, 'jwks_uri', allowHttp).href;
      }
      // jose caches the set, re-fetches on an unknown kid (at most every 30 s) and every 10 min.
      jwks = createRemoteJWKSet(new URL(url), {
        timeoutDuration: 10_000,
        cooldownDuration: 30_000,
        [customFetch]: fetchFn,
      });
      return jwks;
    })().finally(() => {
      discovering = undefined;
    });
    return discovering;
  };

  const introspected = new ExpiringCache<Record<string, unknown>>({ maxEntries: 10_000, now });
  const checkClaims = (claims: Record<string, unknown>) => {
    if (options.issuer !== undefined && claims['iss'] !== undefined && claims['iss'] !== options.issuer)
      throw new Error('unexpected issuer');
    if (options.audience !== undefined) {
      const aud = claims['aud'];
      const list = Array.isArray(aud) ? aud : aud === undefined ? [] : [aud];
      if (!list.includes(options.audience)) throw new Error('unexpected audience');
    }
    const exp = claims['exp'];
    if (typeof exp === 'number' && exp * 1000 + CLOCK_TOLERANCE_SEC * 1000 <= now())
      throw new Error('token expired');
    // RFC 7662 §2.2 nbf (jose checks it for JWTs; introspection answers need it here).
    const nbf = claims['nbf'];
    if (typeof nbf === 'number' && nbf * 1000 - CLOCK_TOLERANCE_SEC * 1000 > now())
      throw new Error('token not yet valid');
    checkServiceAccount(claims, options.serviceAccount);
  };
  const introspect = async (token: string): Promise<Record<string, unknown>> => {
    const url = options.introspectionUrl as string;
    return introspected.getOrLoad(sha256Hex(token), async () => {
      let claims: Record<string, unknown> | undefined;
      try {
        claims = await introspectToken(
          url,
          options.clientId === undefined
            ? undefined
            : { clientId: options.clientId, ...definedOnly({ clientSecret: options.clientSecret }) },
          token,
          fetchFn,
        );
      } catch (err) {
        if (!(err instanceof OAuthResponseError)) throw err;
        if (err.status < 200 || err.status > 299)
          throw new Error(`introspection answered ${err.status}`, { cause: err });
        // An answer that is not a JSON introspection response: no token is active by it.
        claims = undefined;
      }
      // RFC 7662 §2.2: anything but `active: true` is an inactive token.
      if (claims?.['active'] !== true) throw new Error('token is not active');
      checkClaims(claims);
      const exp = typeof claims['exp'] === 'number' ? claims['exp'] * 1000 : Number.POSITIVE_INFINITY;
      return { value: claims, expiresAt: Math.min(exp, now() + INTROSPECTION_CACHE_MS) };
    });
  };

  return async (token) => {
    let isJws: boolean;
    try {
      decodeProtectedHeader(token);
      isJws = token.split('.').length === 3;
    } catch {
      isJws = false;
    }
    if (isJws && (options.jwksUrl !== undefined || options.issuer !== undefined)) {
      const { payload } = await jwtVerify(token, await keySet(), {
        ...definedOnly({ issuer: options.issuer, audience: options.audience }),
        clockTolerance: CLOCK_TOLERANCE_SEC,
        currentDate: new Date(now()),
      });
      checkServiceAccount(payload, options.serviceAccount);
      return payload;
    }
    if (options.introspectionUrl !== undefined) return introspect(token);
    throw new Error('the token is not a JWT and no introspection endpoint is configured');
  };
}

/** Reads `oidc_config.cacertPath` now, so a missing or non-PEM file is a start error naming it. */
function readCaBundle(path: string): string {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SkepError(
      'invalid_config',
      `oidc_config.cacertPath: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  try {
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error('the file holds no PEM certificate');
    createSecureContext({ ca: pem });
  } catch (err) {
    throw new SkepError('invalid_config', `oidc_config.cacertPath: ${path}: ${(err as Error).message}`);
  }
  return pem;
}

/** The token in `oidc_config.authTokenFile` (named by `field`); its content never reaches an error or a log. */
function readAuthToken(path: string, field: string): string {
  let token: string;
  try {
    token = readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new SkepError(
      'invalid_config',
      `${field}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  if (token === '') throw new SkepError('invalid_config', `${field}: ${path} is empty`);
  return token;
}

/**
 * `fetch` that sends the `authTokenFile` token (RFC 6750 §2.1) to the origins the configuration
 * names — the issuer's and the JWKS URL's — and to no other: a `jwks_uri` that discovery points
 * elsewhere is fetched without it, and the outbound client drops it on a cross-origin redirect.
 * A request that already carries credentials (introspection with a client secret) keeps them.
 */
function withAuthToken(fetchFn: FetchLike, options: InboundAuthOptions): FetchLike {
  const file = options.authTokenFile;
  if (file === undefined) return fetchFn;
  const field = options.authTokenField ?? 'oidc_config.authTokenFile';
  readAuthToken(file, field);
  const origins = new Set<string>();
  for (const value of [options.issuer, options.jwksUrl])
    if (value !== undefined) origins.add(new URL(value).origin);
  return (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = new Headers(init?.headers);
    if (!origins.has(url.origin) || headers.has('authorization')) return fetchFn(input, init);
    headers.set('authorization', `Bearer ${readAuthToken(file, field)}`);
    return fetchFn(input, { ...init, headers });
  };
}

/**
 * A Kubernetes service-account token names its account in `sub` as
 * `system:serviceaccount:<namespace>:<name>` (Kubernetes "Service account tokens"); with a
 * restriction, any other subject is refused.
 */
function checkServiceAccount(
  claims: Record<string, unknown>,
  only: InboundAuthOptions['serviceAccount'],
): void {
  if (only === undefined) return;
  const m =
    typeof claims['sub'] === 'string' ? /^system:serviceaccount:([^:]+):([^:]+)$/.exec(claims['sub']) : null;
  if (m === null) throw new Error('the token is not a Kubernetes service-account token');
  if (m[1] !== only.namespace) throw new Error('the service account is of another namespace');
  if (only.name !== undefined && m[2] !== only.name)
    throw new Error('the token is of another service account');
}

/** RFC 9728 §3.1: the metadata URL for a resource inserts the well-known segment before its path. */
export function protectedResourceMetadataUrl(resourceUrl: string): string {
  const u = new URL(resourceUrl);
  const path = u.pathname === '/' ? '' : u.pathname;
  return `${u.origin}${METADATA_PATH}${path}`;
}

/**
 * The resource as a client behind an ingress reaches it: the ingress's origin (when trusted
 * headers name one) and its path prefix before the resource's own path.
 */
function resourceThrough(resourceUrl: string, view: PublicView): string {
  const u = new URL(resourceUrl);
  return `${view.origin ?? u.origin}${view.prefix}${u.pathname}${u.search}`;
}

/**
 * The metadata URL named in the challenge for a client behind an ingress. RFC 9728 §3.1 inserts
 * the well-known segment at the root of the resource's origin, which an ingress that serves
 * this proxy under a prefix (and strips it) does not route here; §5.1 lets `resource_metadata`
 * name any URL, so it names this proxy's own metadata path as reached through the ingress.
 */
function metadataUrlThrough(resourceUrl: string, view: PublicView): string {
  const own = new URL(protectedResourceMetadataUrl(resourceUrl));
  return `${view.origin ?? own.origin}${view.prefix}${own.pathname}`;
}

export interface InboundMiddlewareOptions {
  verify: TokenVerifier;
  resourceUrl?: string;
  /**
   * `resourceUrl` is the proxy's own URL, not a configured `oidc_config.resourceURL`: the
   * resource and metadata URLs handed out then follow how each request reached the proxy
   * (`ctx.publicView`: an ingress's prefix, and with `trust_proxy_headers` its origin). A
   * configured URL is used as written.
   */
  resourceFollowsView?: boolean;
  authorizationServers: string[];
  scopes?: string[];
  logger: Logger;
}

/** The `auth` middleware: establishes `ctx.identity` or answers 401 with a challenge. */
export function createInboundAuthMiddleware(options: InboundMiddlewareOptions): ProxyMiddleware {
  const { verify, logger, resourceUrl } = options;
  const metadataUrl = resourceUrl === undefined ? undefined : protectedResourceMetadataUrl(resourceUrl);
  const seen = (view: PublicView | undefined): { resource: string; metadata: string } | undefined => {
    if (resourceUrl === undefined || metadataUrl === undefined) return undefined;
    const asConfigured =
      options.resourceFollowsView !== true ||
      view === undefined ||
      (view.prefix === '' && view.origin === undefined);
    if (asConfigured) return { resource: resourceUrl, metadata: metadataUrl };
    return { resource: resourceThrough(resourceUrl, view), metadata: metadataUrlThrough(resourceUrl, view) };
  };
  const metadataPaths =
    resourceUrl === undefined
      ? new Set<string>()
      : new Set([METADATA_PATH, new URL(metadataUrl as string).pathname]);
  const scope = options.scopes?.length ? options.scopes.join(' ') : undefined;
  const reject = (
    view: PublicView | undefined,
    error?: string,
    description?: string,
  ): ProxyMiddlewareResult =>
    challenge(
      401,
      {
        // RFC 9728 §5.1 resource_metadata; RFC 6750 §3 error and scope.
        ...definedOnly({ resource_metadata: seen(view)?.metadata }),
        ...(error === undefined ? {} : { error, error_description: description }),
        ...definedOnly({ scope }),
      },
      error === undefined ? 'authentication required' : 'invalid token',
    );
  return {
    name: 'auth',
    async handle(ctx: ProxyRequestContext) {
      const token = bearerFrom(ctx.headers.authorization);
      // RFC 6750 §3.1: a request without credentials gets a challenge without an error code.
      if (token === undefined) return reject(ctx.publicView);
      let claims: Record<string, unknown>;
      try {
        claims = await verify(token);
      } catch (err) {
        // The reason goes to the debug log (never the token); the client learns only "invalid".
        logger.debug({ reason: (err as Error).message }, 'inbound token rejected');
        return reject(ctx.publicView, 'invalid_token', 'the access token is invalid or expired');
      }
      ctx.identity = {
        token,
        claims,
        ...(typeof claims['sub'] === 'string' ? { subject: claims['sub'] } : {}),
      };
      return undefined;
    },
    wellKnown(path: string, view: PublicView) {
      const urls = seen(view);
      if (urls === undefined || !metadataPaths.has(path)) return undefined;
      return {
        status: 200,
        headers: {
          'cache-control': 'public, max-age=3600',
          'access-control-allow-origin': '*',
          // The document names the URL the request came through: a cache must not serve it to another route.
          ...(options.resourceFollowsView === true ? { vary: FORWARDED_HEADERS } : {}),
        },
        body: {
          resource: urls.resource,
          authorization_servers: options.authorizationServers,
          bearer_methods_supported: ['header'],
          ...(options.scopes?.length ? { scopes_supported: options.scopes } : {}),
        },
      };
    },
  };
}
