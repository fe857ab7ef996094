/**
 * Upstream identity providers: where the authorization server sends the user to log in.
 * `oidc` providers are discovered from their issuer and their ID token is validated
 * (issuer, audience, expiry, nonce) with oauth4webapi; `oauth2` providers have explicit
 * endpoints, an optional `token_response_mapping` for non-standard token responses
 * (dot-paths), a `userinfo` endpoint with ordered field lists (first non-empty wins), or —
 * without userinfo — synthesis mode: a non-personal subject derived from the access token.
 * Either type can register itself at the upstream with RFC 7591 (`dcr_config`); the
 * obtained credentials are cached in storage. Every outgoing call has a timeout.
 *
 * Every outgoing call also goes through the outbound address policy (`src/shared/net`): the
 * hosts the configuration names (issuer, token, userinfo, DCR endpoints) may be loopback or
 * private; endpoints a provider's metadata points elsewhere must be public unless the
 * upstream sets `insecure_allow_http`; link-local and cloud metadata addresses never.
 */
import { createHash } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import {
  authorizationEndpointRefusal,
  definedOnly,
  findOutboundRefusal,
  outboundFetch,
  SkepError,
} from '../shared/index.js';
import type { ResolvedUpstream } from './config.js';
import type { AuthStorage, DcrCredentials } from './storage.js';

export interface UpstreamTokens {
  accessToken: string;
  refreshToken?: string;
  idToken?: string;
  /** Unix seconds. */
  expiresAt?: number;
  scope?: string;
}

export interface UpstreamIdentity {
  subject: string;
  name?: string;
  email?: string;
  /** True when the subject was derived from the token (no personal identity). */
  synthetic: boolean;
}

export interface UpstreamDeps {
  storage: AuthStorage;
  /** Replaces the guarded fetch (tests). */
  fetch?: typeof fetch;
  now: () => number;
  timeoutMs: number;
}

/** Reads a dot-notation path (`data.token.value`, `items.0.id`) from a JSON value. */
export function readPath(value: unknown, path: string): unknown {
  let cur: unknown = value;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function nonEmptyString(v: unknown): string | undefined {
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

/** The first non-empty value among `fields` (each a dot-path) — ToolHive's upstream field-mapping rule. */
export function firstField(doc: unknown, fields: string[]): string | undefined {
  for (const f of fields) {
    const v = nonEmptyString(readPath(doc, f));
    if (v !== undefined) return v;
  }
  return undefined;
}

/** Synthesis mode: `tk-` + the first 16 bytes of SHA-256(access token), in hex. */
export function syntheticSubject(accessToken: string): string {
  return `tk-${createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('hex')}`;
}

function upstreamError(provider: string, message: string, cause?: unknown): SkepError {
  // A refused address says why (and how to allow it); other causes stay in the log.
  const refusal = findOutboundRefusal(cause);
  const why = refusal === undefined ? '' : `: ${refusal.message}`;
  return new SkepError('bad_gateway', `upstream provider "${provider}": ${message}${why}`, { cause });
}

/** The outbound policy of one upstream provider (see the module comment). */
function upstreamPolicy(cfg: ResolvedUpstream): Parameters<typeof outboundFetch>[0] {
  const named = [
    cfg.oidc?.issuerUrl,
    cfg.oauth2?.tokenEndpoint,
    cfg.userInfo?.endpoint_url,
    cfg.dcr?.discoveryUrl,
    cfg.dcr?.registrationEndpoint,
  ];
  const hosts = new Set<string>();
  for (const url of named) {
    if (url === undefined || url === '') continue;
    try {
      hosts.add(new URL(url).hostname);
    } catch {
      // validated by the config; an unparsable URL fails where it is used
    }
  }
  return {
    allowLoopback: cfg.allowHttp,
    allowPrivate: cfg.allowHttp,
    privateHosts: [...hosts],
    hint: `set insecure_allow_http on upstream "${cfg.name}" to use endpoints on other private hosts`,
  };
}

export class UpstreamProvider {
  readonly name: string;
  readonly #cfg: ResolvedUpstream;
  readonly #deps: UpstreamDeps & { fetch: typeof fetch };
  #metadata: Promise<oauth.AuthorizationServer> | undefined;
  #credentials: Promise<DcrCredentials> | undefined;

  constructor(cfg: ResolvedUpstream, deps: UpstreamDeps) {
    this.name = cfg.name;
    this.#cfg = cfg;
    // Without an injected fetch (tests inject one), upstream calls go through the address policy.
    this.#deps = { ...deps, fetch: deps.fetch ?? outboundFetch(upstreamPolicy(cfg)) };
  }

  #options(): oauth.TokenEndpointRequestOptions & oauth.DiscoveryRequestOptions {
    return {
      signal: AbortSignal.timeout(this.#deps.timeoutMs),
      // oauth4webapi passes `body: undefined` on GET, which RequestInit's type does not allow.
      [oauth.customFetch]: (
        url: string,
        init: oauth.CustomFetchOptions<string, URLSearchParams | undefined>,
      ) => this.#deps.fetch(url, definedOnly(init)),
      ...(this.#cfg.allowHttp ? { [oauth.allowInsecureRequests]: true } : {}),
    };
  }

  /** Authorization-server metadata: discovered for OIDC, built from the explicit endpoints for OAuth 2. */
  #as(): Promise<oauth.AuthorizationServer> {
    this.#metadata ??= (async () => {
      if (this.#cfg.type === 'oauth2') {
        const o = this.#cfg.oauth2 as NonNullable<ResolvedUpstream['oauth2']>;
        return {
          issuer: new URL(o.authorizationEndpoint).origin,
          authorization_endpoint: o.authorizationEndpoint,
          token_endpoint: o.tokenEndpoint,
        };
      }
      const issuer = new URL((this.#cfg.oidc as NonNullable<ResolvedUpstream['oidc']>).issuerUrl);
      try {
        const res = await oauth.discoveryRequest(issuer, { ...this.#options(), algorithm: 'oidc' });
        return await oauth.processDiscoveryResponse(issuer, res);
      } catch (err) {
        throw upstreamError(this.name, `OIDC discovery at ${issuer.href} failed`, err);
      }
    })();
    // A failed discovery is retried on the next login instead of being cached.
    this.#metadata.catch(() => {
      this.#metadata = undefined;
    });
    return this.#metadata;
  }

  /** Client credentials: configured, or obtained once by RFC 7591 registration and cached. */
  #client(): Promise<DcrCredentials> {
    if (!this.#cfg.dcr) {
      const c: DcrCredentials = { client_id: this.#cfg.clientId as string };
      if (this.#cfg.clientSecret) c.client_secret = this.#cfg.clientSecret;
      return Promise.resolve(c);
    }
    this.#credentials ??= this.#register();
    this.#credentials.catch(() => {
      this.#credentials = undefined;
    });
    return this.#credentials;
  }

  async #register(): Promise<DcrCredentials> {
    const dcr = this.#cfg.dcr as NonNullable<ResolvedUpstream['dcr']>;
    const scopesHash = createHash('sha256').update(this.#cfg.scopes.join(' ')).digest('hex').slice(0, 16);
    const idPart = (s: string) => `${s.length}:${s}`;
    const cacheKey = [
      idPart(dcr.discoveryUrl ?? dcr.registrationEndpoint ?? ''),
      idPart(this.name),
      idPart(this.#cfg.redirectUri),
      scopesHash,
    ].join(':');
    const cached = await this.#deps.storage.getDcrCredentials(cacheKey);
    const nowSec = Math.floor(this.#deps.now() / 1000);
    if (cached && (!cached.client_secret_expires_at || cached.client_secret_expires_at > nowSec + 60))
      return cached;

    let endpoint = dcr.registrationEndpoint;
    if (!endpoint) {
      const meta = await this.#getJson(dcr.discoveryUrl as string, 'DCR discovery');
      endpoint = nonEmptyString((meta as Record<string, unknown>)['registration_endpoint']);
      if (!endpoint)
        throw upstreamError(this.name, `${dcr.discoveryUrl} does not advertise a registration_endpoint`);
    }
    const body: Record<string, unknown> = {
      redirect_uris: [this.#cfg.redirectUri],
      client_name: 'Skep authorization server',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    };
    if (this.#cfg.scopes.length) body['scope'] = this.#cfg.scopes.join(' ');
    if (dcr.softwareId) body['software_id'] = dcr.softwareId;
    if (dcr.softwareStatement) body['software_statement'] = dcr.softwareStatement;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
    };
    if (dcr.initialAccessToken) headers['authorization'] = `Bearer ${dcr.initialAccessToken}`;
    let res: Response;
    try {
      res = await this.#deps.fetch(endpoint, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.#deps.timeoutMs),
      });
    } catch (err) {
      throw upstreamError(this.name, 'dynamic client registration could not reach the provider', err);
    }
    const doc = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    const clientId = nonEmptyString(doc['client_id']);
    if (res.status !== 201 && res.status !== 200) {
      throw upstreamError(
        this.name,
        `dynamic client registration answered ${res.status} (${String(doc['error'] ?? '')})`,
      );
    }
    if (!clientId) throw upstreamError(this.name, 'dynamic client registration returned no client_id');
    const creds: DcrCredentials = { client_id: clientId };
    const secret = nonEmptyString(doc['client_secret']);
    if (secret) creds.client_secret = secret;
    const method = nonEmptyString(doc['token_endpoint_auth_method']);
    if (method) creds.token_endpoint_auth_method = method;
    const exp = Number(doc['client_secret_expires_at'] ?? 0);
    if (exp > 0) creds.client_secret_expires_at = exp;
    await this.#deps.storage.saveDcrCredentials(cacheKey, creds, exp > 0 ? exp - nowSec : undefined);
    return creds;
  }

  #clientAuth(c: DcrCredentials): oauth.ClientAuth {
    if (!c.client_secret) return oauth.None();
    return c.token_endpoint_auth_method === 'client_secret_post'
      ? oauth.ClientSecretPost(c.client_secret)
      : oauth.ClientSecretBasic(c.client_secret);
  }

  async #getJson(url: string, what: string): Promise<unknown> {
    try {
      const res = await this.#deps.fetch(url, {
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.#deps.timeoutMs),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return await res.json();
    } catch (err) {
      throw upstreamError(this.name, `${what} at ${url} failed`, err);
    }
  }

  /** The URL the user is sent to (302), with PKCE S256, the nonce and the extra parameters. */
  async authorizationUrl(params: { state: string; codeVerifier: string; nonce: string }): Promise<string> {
    const as = await this.#as();
    if (!as.authorization_endpoint) throw upstreamError(this.name, 'no authorization_endpoint');
    // The user's browser is sent there, and a provider's discovery document chooses it: https
    // only (RFC 6749 §3.1), plain http on loopback or with insecure_allow_http; never another
    // scheme. Checked before a client is registered.
    const refusal = authorizationEndpointRefusal(as.authorization_endpoint, this.#cfg.allowHttp);
    if (refusal !== undefined)
      throw upstreamError(this.name, `the authorization_endpoint is refused: ${refusal}`);
    const client = await this.#client();
    const url = new URL(as.authorization_endpoint);
    for (const [k, v] of Object.entries(this.#cfg.additionalParams)) url.searchParams.set(k, v);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', client.client_id);
    url.searchParams.set('redirect_uri', this.#cfg.redirectUri);
    if (this.#cfg.scopes.length) url.searchParams.set('scope', this.#cfg.scopes.join(' '));
    url.searchParams.set('state', params.state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(params.codeVerifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('nonce', params.nonce);
    return url.href;
  }

  /** Exchanges the upstream's code (with our PKCE verifier) and establishes who logged in. */
  async exchangeCode(
    callback: URLSearchParams,
    expected: { state: string; codeVerifier: string; nonce: string },
  ): Promise<{ tokens: UpstreamTokens; identity: UpstreamIdentity }> {
    const as = await this.#as();
    const creds = await this.#client();
    const client: oauth.Client = { client_id: creds.client_id };
    const code = callback.get('code') ?? '';
    let tokens: UpstreamTokens;
    let idClaims: oauth.IDToken | undefined;
    if (this.#cfg.type === 'oidc') {
      try {
        const params = oauth.validateAuthResponse(as, client, callback, expected.state);
        const res = await oauth.authorizationCodeGrantRequest(
          as,
          client,
          this.#clientAuth(creds),
          params,
          this.#cfg.redirectUri,
          expected.codeVerifier,
          this.#options(),
        );
        const result = await oauth.processAuthorizationCodeResponse(as, client, res, {
          expectedNonce: expected.nonce,
          requireIdToken: true,
        });
        idClaims = oauth.getValidatedIdTokenClaims(result);
        tokens = this.#fromStandard(result);
      } catch (err) {
        throw upstreamError(this.name, 'code exchange or ID token validation failed', err);
      }
    } else {
      tokens = await this.#tokenRequest(creds, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: this.#cfg.redirectUri,
        code_verifier: expected.codeVerifier,
      });
    }
    return { tokens, identity: await this.#identify(tokens, idClaims) };
  }

  /** Refreshes the upstream access token; keeps the old refresh token when none is returned. */
  async refresh(refreshToken: string): Promise<UpstreamTokens> {
    const as = await this.#as();
    const creds = await this.#client();
    let tokens: UpstreamTokens;
    if (this.#cfg.type === 'oidc') {
      const client: oauth.Client = { client_id: creds.client_id };
      try {
        const res = await oauth.refreshTokenGrantRequest(
          as,
          client,
          this.#clientAuth(creds),
          refreshToken,
          this.#options(),
        );
        tokens = this.#fromStandard(await oauth.processRefreshTokenResponse(as, client, res));
      } catch (err) {
        throw upstreamError(this.name, 'token refresh failed', err);
      }
    } else {
      tokens = await this.#tokenRequest(creds, { grant_type: 'refresh_token', refresh_token: refreshToken });
    }
    tokens.refreshToken ??= refreshToken;
    return tokens;
  }

  #fromStandard(r: oauth.TokenEndpointResponse): UpstreamTokens {
    const t: UpstreamTokens = { accessToken: r.access_token };
    if (r.refresh_token) t.refreshToken = r.refresh_token;
    if (r.id_token) t.idToken = r.id_token;
    if (typeof r.expires_in === 'number') t.expiresAt = Math.floor(this.#deps.now() / 1000) + r.expires_in;
    if (r.scope) t.scope = r.scope;
    return t;
  }

  /** OAuth 2 token call done by hand, so `token_response_mapping` can read non-standard responses. */
  async #tokenRequest(creds: DcrCredentials, form: Record<string, string>): Promise<UpstreamTokens> {
    const o = this.#cfg.oauth2 as NonNullable<ResolvedUpstream['oauth2']>;
    const body = new URLSearchParams(form);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    if (creds.client_secret && creds.token_endpoint_auth_method !== 'client_secret_post') {
      const enc = (s: string) => encodeURIComponent(s);
      headers['authorization'] =
        `Basic ${Buffer.from(`${enc(creds.client_id)}:${enc(creds.client_secret)}`).toString('base64')}`;
    } else {
      body.set('client_id', creds.client_id);
      if (creds.client_secret) body.set('client_secret', creds.client_secret);
    }
    let res: Response;
    let doc: unknown;
    try {
      res = await this.#deps.fetch(o.tokenEndpoint, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(this.#deps.timeoutMs),
      });
      doc = await res.json();
    } catch (err) {
      throw upstreamError(this.name, 'token endpoint could not be read', err);
    }
    const m = this.#cfg.tokenResponseMapping ?? {
      access_token_path: 'access_token',
      expires_in_path: 'expires_in',
      refresh_token_path: 'refresh_token',
      scope_path: 'scope',
    };
    const accessToken = nonEmptyString(readPath(doc, m.access_token_path));
    if (!res.ok || !accessToken) {
      const error = nonEmptyString(readPath(doc, 'error')) ?? `HTTP ${res.status}`;
      throw upstreamError(this.name, `token endpoint returned no access token (${error})`);
    }
    const t: UpstreamTokens = { accessToken };
    const refresh = nonEmptyString(readPath(doc, m.refresh_token_path));
    if (refresh) t.refreshToken = refresh;
    const expiresIn = Number(readPath(doc, m.expires_in_path));
    if (Number.isFinite(expiresIn) && expiresIn > 0)
      t.expiresAt = Math.floor(this.#deps.now() / 1000) + expiresIn;
    const scope = readPath(doc, m.scope_path);
    if (typeof scope === 'string') t.scope = scope;
    else if (Array.isArray(scope)) t.scope = scope.join(' ');
    return t;
  }

  async #identify(tokens: UpstreamTokens, idClaims: oauth.IDToken | undefined): Promise<UpstreamIdentity> {
    const ui = this.#cfg.userInfo;
    let profile: unknown;
    if (ui) profile = await this.#userInfo(tokens.accessToken, ui.endpoint_url);
    else if (this.#cfg.type === 'oidc') {
      const as = await this.#as();
      if (as.userinfo_endpoint) profile = await this.#userInfo(tokens.accessToken, as.userinfo_endpoint);
    }
    if (this.#cfg.type === 'oidc') {
      const claim = (this.#cfg.oidc as NonNullable<ResolvedUpstream['oidc']>).subjectClaim;
      const subject = nonEmptyString((idClaims as Record<string, unknown> | undefined)?.[claim]);
      if (!subject) throw upstreamError(this.name, `the ID token has no "${claim}" claim`);
      const id: UpstreamIdentity = { subject, synthetic: false };
      const name = firstField(profile, ui?.nameFields ?? ['name']) ?? nonEmptyString(idClaims?.['name']);
      const email = firstField(profile, ui?.emailFields ?? ['email']) ?? nonEmptyString(idClaims?.['email']);
      if (name) id.name = name;
      if (email) id.email = email;
      return id;
    }
    if (!ui) return { subject: syntheticSubject(tokens.accessToken), synthetic: true };
    const subject = firstField(profile, ui.subjectFields);
    if (!subject)
      throw upstreamError(
        this.name,
        `userinfo has none of the subject fields ${ui.subjectFields.join(', ')}`,
      );
    const id: UpstreamIdentity = { subject, synthetic: false };
    const name = firstField(profile, ui.nameFields);
    const email = firstField(profile, ui.emailFields);
    if (name) id.name = name;
    if (email) id.email = email;
    return id;
  }

  /** `url` is the configured userinfo endpoint, or the one OIDC discovery found. */
  async #userInfo(accessToken: string, url: string): Promise<unknown> {
    const ui = this.#cfg.userInfo;
    const method = ui?.http_method ?? 'GET';
    try {
      const res = await this.#deps.fetch(url, {
        method,
        headers: {
          ...(ui?.additionalHeaders ?? {}),
          accept: 'application/json',
          authorization: `Bearer ${accessToken}`,
        },
        signal: AbortSignal.timeout(this.#deps.timeoutMs),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return await res.json();
    } catch (err) {
      throw upstreamError(this.name, `userinfo request to ${url} failed`, err);
    }
  }
}
