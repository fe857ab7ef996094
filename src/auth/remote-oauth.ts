/**
 * The OAuth client Skep uses towards a remote MCP server that requires authorization
 * (`remote_auth_config`), following the MCP authorization flow (2025-06-18 "Authorization"):
 * the server's RFC 9728 protected-resource metadata names the authorization server; its
 * RFC 8414 metadata gives the endpoints; without a `client_id` the client registers itself
 * (RFC 7591); the user logs in with authorization code + PKCE S256 (RFC 7636) in a browser,
 * or by opening the printed URL when headless; tokens are asked for the remote resource
 * (RFC 8707) and refreshed before they expire. The client registration and the refresh
 * token live in the secrets store (never in the run configuration); the access token only in
 * memory.
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { ProxyMiddleware } from '../proxy/index.js';
import {
  authorizationEndpointRefusal,
  definedOnly,
  findOutboundRefusal,
  type Logger,
  openInBrowser,
  outboundFetch,
  SkepError,
} from '../shared/index.js';
import {
  configuredEndpointsPolicy,
  type FetchLike,
  postClientForm,
  REQUEST_TIMEOUT_MS,
  readJson,
} from './http.js';

/** Where the OAuth client keeps what must survive a restart. `SecretsService` fits. */
export interface SecretStore {
  get(name: string): Promise<string | undefined>;
  create(name: string, value: string): Promise<void>;
  update(name: string, value: string): Promise<void>;
}

export interface RemoteOAuthOptions {
  /** Workload name: scopes the secret names. */
  workload: string;
  remoteUrl: string;
  clientId?: string;
  clientSecret?: string;
  scopes?: string[];
  /** Authorization server issuer; skips RFC 9728 discovery. */
  issuer?: string;
  /** Both set: skip discovery entirely. */
  authorizeUrl?: string;
  tokenUrl?: string;
  /** RFC 8707 resource; default the protected resource from the metadata, else the remote URL. */
  resource?: string;
  /** Loopback port of the redirect URI; 0 picks one. */
  callbackPort?: number;
  /** Do not try to open a browser; only print the URL. */
  skipBrowser?: boolean;
  /** Extra authorization request parameters. */
  oauthParams?: Record<string, string>;
  /** How long the login may take, ms (default 5 min). */
  loginTimeoutMs?: number;
  /**
   * Send the RFC 8707 `resource` parameter (default true). A caller whose authorization server
   * may not know the resource (the registry login without an audience) turns it off; an explicit
   * `resource` is sent either way.
   */
  sendResource?: boolean;
  /** Names of the secrets that hold the client registration and the refresh token. */
  secretNames?: { client: string; refreshToken: string };
  /** What the login is for, in the prompt and the log (default "the remote MCP server"). */
  purpose?: string;
}

export interface RemoteOAuthDeps {
  logger: Logger;
  secrets: SecretStore | undefined;
  fetch?: FetchLike;
  now?: () => number;
  /** Shows the login URL to the user (the default opens a browser when possible, and prints it). */
  openUrl?: (url: string) => Promise<void> | void;
  /** Told the login URL before it is shown (the runner puts it in the workload's status). */
  onLoginUrl?: (url: string) => void;
}

interface Endpoints {
  issuer?: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  registrationEndpoint?: string;
  resource: string;
}

interface ClientRegistration {
  client_id: string;
  client_secret?: string;
  redirect_uri?: string;
}

interface TokenSet {
  accessToken: string;
  expiresAt: number;
  /** When to renew: REFRESH_SKEW_MS before expiry, or at 80% of a short lifetime. */
  refreshAt: number;
  refreshToken?: string;
}

/** Refresh this long before expiry, or at 80% of a shorter lifetime. */
const REFRESH_SKEW_MS = 60_000;

export function remoteSecretNames(workload: string): { client: string; refreshToken: string } {
  return {
    client: `skep-remote-oauth-${workload}-client`,
    refreshToken: `skep-remote-oauth-${workload}-refresh-token`,
  };
}

async function putSecret(store: SecretStore, name: string, value: string): Promise<void> {
  if ((await store.get(name)) === undefined) await store.create(name, value);
  else await store.update(name, value);
}

function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/**
 * The authorization endpoint is where the user's browser is sent, and a remote server's
 * metadata chooses it: only https (http on loopback) is used (RFC 6749 §3.1, MCP 2025-06-18
 * "Communication Security"), checked before anything is registered, fetched or opened (a
 * `file:` or `javascript:` URL handed to the desktop's opener runs code: CVE-2025-6514).
 */
function checkedEndpoint(
  value: string,
  source: string,
  code: 'bad_gateway' | 'bad_request' = 'bad_gateway',
): string {
  const refusal = authorizationEndpointRefusal(value);
  if (refusal !== undefined)
    throw new SkepError(
      code,
      `${source} names the authorization endpoint ${JSON.stringify(value)}, which is refused: ${refusal}`,
    );
  return value;
}

/** RFC 9728 §5.1: the `resource_metadata` parameter of a Bearer challenge. */
export function resourceMetadataFrom(header: string | null): string | undefined {
  if (header === null) return undefined;
  return /resource_metadata="([^"]+)"/i.exec(header)?.[1];
}

export class RemoteOAuthClient {
  readonly #o: RemoteOAuthOptions;
  readonly #d: RemoteOAuthDeps;
  readonly #fetch: FetchLike;
  readonly #now: () => number;
  readonly #names: { client: string; refreshToken: string };
  #endpoints: Endpoints | undefined;
  #client: ClientRegistration | undefined;
  #tokens: TokenSet | undefined;
  #refreshing: Promise<TokenSet> | undefined;
  #closed = false;
  readonly #abort = new AbortController();

  constructor(options: RemoteOAuthOptions, deps: RemoteOAuthDeps) {
    this.#o = options;
    this.#d = deps;
    // Discovery, registration and token requests go where the remote server's metadata
    // points: those must be public or on a host the configuration names (`src/shared/net`).
    this.#fetch =
      deps.fetch ??
      outboundFetch(
        configuredEndpointsPolicy([options.remoteUrl, options.issuer, options.tokenUrl], {
          hint: 'set remote_auth_config.issuer (or authorize_url and token_url) to use an authorization server on a private network',
        }),
      );
    this.#now = deps.now ?? Date.now;
    this.#names = options.secretNames ?? remoteSecretNames(options.workload);
  }

  /** Gets a first access token: refresh token from the secrets store if usable, else a login. */
  async start(): Promise<void> {
    await this.#outbound(async () => {
      this.#endpoints ??= await this.#discover();
      const stored = await this.#storedRefreshToken();
      if (stored !== undefined) {
        try {
          this.#tokens = await this.#refresh(stored);
          return;
        } catch (err) {
          this.#d.logger.info(
            { reason: (err as Error).message },
            'stored refresh token unusable; logging in again',
          );
        }
      }
      this.#tokens = await this.#login();
    });
  }

  /** Reads the authorization server's metadata (RFC 8414 / OpenID Connect Discovery), once. */
  async discover(): Promise<void> {
    await this.#outbound(async () => {
      this.#endpoints ??= await this.#discover();
    });
  }

  /**
   * Non-interactive start: an access token from the refresh token in the secrets store.
   * False when none is stored or the authorization server refuses it (an OAuth error
   * answer); a failure to reach the server is thrown.
   */
  async resume(): Promise<boolean> {
    return this.#outbound(() => this.#resume());
  }

  /** Interactive start: the authorization code flow, whatever is stored. */
  async login(): Promise<void> {
    await this.#outbound(async () => {
      this.#endpoints ??= await this.#discover();
      this.#tokens = await this.#login();
    });
  }

  /** Outbound address refusals become a 403 naming the configured server. */
  async #outbound<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const refusal = findOutboundRefusal(err);
      if (refusal === undefined) throw err;
      throw new SkepError('forbidden', `OAuth for ${this.#o.remoteUrl}: ${refusal.message}`, { cause: err });
    }
  }

  async #resume(): Promise<boolean> {
    this.#endpoints ??= await this.#discover();
    const stored = await this.#storedRefreshToken();
    if (stored === undefined) return false;
    try {
      this.#tokens = await this.#refresh(stored);
      return true;
    } catch (err) {
      // An OAuth error answer (invalid_grant...) means the token is gone for good.
      if (err instanceof SkepError && err.code === 'unauthorized') {
        this.#d.logger.info({ reason: err.message }, 'stored refresh token refused');
        return false;
      }
      throw err;
    }
  }

  #storedRefreshToken(): Promise<string | undefined> {
    return this.#d.secrets === undefined
      ? Promise.resolve(undefined)
      : this.#d.secrets.get(this.#names.refreshToken);
  }

  /** The RFC 8707 `resource` parameter, unless turned off. */
  #resourceParam(resource: string): Record<string, string> {
    return this.#o.sendResource === false && this.#o.resource === undefined ? {} : { resource };
  }

  /** A valid access token, refreshed (once, shared by concurrent callers) when close to expiry. */
  async accessToken(): Promise<string> {
    const t = this.#tokens;
    if (t === undefined) throw new Error('not logged in');
    if (this.#now() < t.refreshAt) return t.accessToken;
    if (t.refreshToken === undefined) {
      if (t.expiresAt > this.#now()) return t.accessToken;
      throw new Error('access token expired and no refresh token was issued; restart the workload to log in');
    }
    this.#refreshing ??= this.#refreshLatest(t.refreshToken).finally(() => {
      this.#refreshing = undefined;
    });
    this.#tokens = await this.#refreshing;
    return this.#tokens.accessToken;
  }

  close(): void {
    this.#closed = true;
    this.#abort.abort();
  }

  /**
   * Refreshes with the newest refresh token: another process sharing the secrets store (a
   * CLI command next to `skep serve`) may have rotated the one held in memory, and
   * presenting a rotated token can make the server revoke the whole grant.
   */
  async #refreshLatest(held: string): Promise<TokenSet> {
    const stored = await this.#storedRefreshToken().catch(() => undefined);
    return this.#refresh(stored ?? held);
  }

  async #getJson(url: string): Promise<Record<string, unknown> | undefined> {
    const res = await this.#fetch(url, {
      headers: { accept: 'application/json', 'mcp-protocol-version': '2025-06-18' },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!res.ok) {
      await res.arrayBuffer().catch(() => undefined);
      return undefined;
    }
    const doc = await readJson(res);
    return doc !== null && typeof doc === 'object' ? (doc as Record<string, unknown>) : undefined;
  }

  async #discover(): Promise<Endpoints> {
    const o = this.#o;
    if (o.authorizeUrl !== undefined && o.tokenUrl !== undefined) {
      return {
        authorizationEndpoint: checkedEndpoint(
          o.authorizeUrl,
          'remote_auth_config.authorize_url',
          'bad_request',
        ),
        tokenEndpoint: o.tokenUrl,
        resource: o.resource ?? o.remoteUrl,
      };
    }
    let issuer = o.issuer;
    let resource = o.resource;
    if (issuer === undefined) {
      // RFC 9728 §5: an unauthenticated request's challenge names the metadata; else the
      // well-known URL with the resource path inserted (§3.1), then the root one.
      const probe = await this.#fetch(o.remoteUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      await probe.arrayBuffer().catch(() => undefined);
      const remote = new URL(o.remoteUrl);
      const path = remote.pathname === '/' ? '' : remote.pathname;
      const candidates = [
        resourceMetadataFrom(probe.headers.get('www-authenticate')),
        `${remote.origin}/.well-known/oauth-protected-resource${path}`,
        `${remote.origin}/.well-known/oauth-protected-resource`,
      ].filter((u): u is string => u !== undefined);
      let metadata: Record<string, unknown> | undefined;
      for (const url of candidates) {
        metadata = await this.#getJson(url);
        if (metadata !== undefined) break;
      }
      const servers = metadata?.['authorization_servers'];
      if (!Array.isArray(servers) || typeof servers[0] !== 'string')
        throw new SkepError(
          'bad_gateway',
          `${o.remoteUrl} publishes no OAuth protected-resource metadata; set remote_auth_config.issuer`,
        );
      issuer = servers[0];
      if (typeof metadata?.['resource'] === 'string') resource ??= metadata['resource'];
    }
    // RFC 8414 §3.1 (path inserted), then OpenID Connect Discovery forms.
    const iss = new URL(issuer);
    const ipath = iss.pathname === '/' ? '' : iss.pathname.replace(/\/$/, '');
    const urls = [
      `${iss.origin}/.well-known/oauth-authorization-server${ipath}`,
      `${iss.origin}/.well-known/openid-configuration${ipath}`,
      `${iss.origin}${ipath}/.well-known/openid-configuration`,
    ];
    for (const url of urls) {
      const doc = await this.#getJson(url);
      if (doc === undefined) continue;
      // RFC 8414 §3.3: the metadata must be about the issuer we asked for.
      if (doc['issuer'] !== issuer && doc['issuer'] !== issuer.replace(/\/$/, ''))
        throw new SkepError('bad_gateway', `authorization server metadata at ${url} names another issuer`);
      if (typeof doc['authorization_endpoint'] !== 'string' || typeof doc['token_endpoint'] !== 'string')
        throw new SkepError('bad_gateway', `authorization server metadata at ${url} lacks endpoints`);
      return {
        issuer,
        authorizationEndpoint:
          o.authorizeUrl === undefined
            ? checkedEndpoint(doc['authorization_endpoint'], `the authorization server metadata at ${url}`)
            : checkedEndpoint(o.authorizeUrl, 'remote_auth_config.authorize_url', 'bad_request'),
        tokenEndpoint: o.tokenUrl ?? doc['token_endpoint'],
        ...(typeof doc['registration_endpoint'] === 'string'
          ? { registrationEndpoint: doc['registration_endpoint'] }
          : {}),
        resource: resource ?? o.remoteUrl,
      };
    }
    throw new SkepError('bad_gateway', `no authorization server metadata found for ${issuer}`);
  }

  async #clientFor(redirectUri: string): Promise<ClientRegistration> {
    if (this.#o.clientId !== undefined) {
      return {
        client_id: this.#o.clientId,
        ...(this.#o.clientSecret ? { client_secret: this.#o.clientSecret } : {}),
      };
    }
    const secrets = this.#d.secrets;
    const stored = secrets === undefined ? undefined : await secrets.get(this.#names.client);
    if (stored !== undefined) {
      const reg = JSON.parse(stored) as ClientRegistration;
      if (reg.redirect_uri === redirectUri) return reg;
    }
    const endpoint = this.#endpoints?.registrationEndpoint;
    if (endpoint === undefined)
      throw new SkepError(
        'bad_request',
        'the authorization server has no registration endpoint; set remote_auth_config.client_id',
      );
    // RFC 7591 §2/§3.1: a public native client (PKCE, no secret).
    const res = await this.#fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        client_name: `Skep (${this.#o.workload})`,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        application_type: 'native',
        ...(this.#o.scopes?.length ? { scope: this.#o.scopes.join(' ') } : {}),
      }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const body = (await readJson(res)) as Record<string, unknown> | undefined;
    if (res.status !== 201 && res.status !== 200)
      throw new SkepError(
        'bad_gateway',
        `client registration failed (${res.status} ${String(body?.['error'] ?? '')})`,
      );
    if (typeof body?.['client_id'] !== 'string')
      throw new SkepError('bad_gateway', 'client registration returned no client_id');
    const reg: ClientRegistration = {
      client_id: body['client_id'],
      ...(typeof body['client_secret'] === 'string' ? { client_secret: body['client_secret'] } : {}),
      redirect_uri: redirectUri,
    };
    if (secrets !== undefined) await putSecret(secrets, this.#names.client, JSON.stringify(reg));
    return reg;
  }

  async #login(): Promise<TokenSet> {
    const endpoints = this.#endpoints as Endpoints;
    const callback = createServer();
    callback.listen(this.#o.callbackPort ?? 0, '127.0.0.1');
    await once(callback, 'listening');
    try {
      const port = (callback.address() as AddressInfo).port;
      const redirectUri = `http://127.0.0.1:${port}/callback`;
      const client = await this.#clientFor(redirectUri);
      this.#client = client;
      const verifier = randomBytes(32).toString('base64url');
      const state = randomBytes(16).toString('base64url');
      const url = new URL(endpoints.authorizationEndpoint);
      const params: Record<string, string> = {
        ...this.#o.oauthParams,
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: redirectUri,
        state,
        code_challenge: s256(verifier),
        code_challenge_method: 'S256',
        ...this.#resourceParam(endpoints.resource),
        ...(this.#o.scopes?.length ? { scope: this.#o.scopes.join(' ') } : {}),
      };
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      const code = this.#awaitCallback(callback, state, endpoints.issuer);
      await this.#show(url.href);
      return await this.#tokenRequest({
        grant_type: 'authorization_code',
        code: await code,
        redirect_uri: redirectUri,
        code_verifier: verifier,
        ...this.#resourceParam(endpoints.resource),
      });
    } finally {
      callback.closeAllConnections();
      callback.close();
    }
  }

  #awaitCallback(server: Server, state: string, issuer: string | undefined): Promise<string> {
    const timeoutMs = this.#o.loginTimeoutMs ?? 300_000;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new SkepError('gateway_timeout', 'the login was not completed in time')),
        timeoutMs,
      );
      const stop = () => {
        clearTimeout(timer);
        reject(new Error('login aborted'));
      };
      this.#abort.signal.addEventListener('abort', stop, { once: true });
      server.on('request', (req, res) => {
        const u = new URL(req.url ?? '/', 'http://127.0.0.1');
        if (u.pathname !== '/callback') {
          res.writeHead(404).end();
          return;
        }
        const p = u.searchParams;
        const fail = (why: string) => {
          res
            .writeHead(400, { 'content-type': 'text/plain' })
            .end(`Login failed: ${why}. You can close this window.`);
        };
        // RFC 6749 §10.12: the state binds the response to our request; RFC 9207 §2.4 the issuer.
        if (p.get('state') !== state) return fail('state mismatch');
        if (issuer !== undefined && p.has('iss') && p.get('iss') !== issuer) return fail('issuer mismatch');
        const error = p.get('error');
        if (error !== null) {
          fail(error);
          clearTimeout(timer);
          reject(new SkepError('unauthorized', `the authorization server refused the login: ${error}`));
          return;
        }
        const code = p.get('code');
        if (code === null) return fail('no code');
        res
          .writeHead(200, { 'content-type': 'text/plain' })
          .end('Login complete. You can close this window.');
        clearTimeout(timer);
        this.#abort.signal.removeEventListener('abort', stop);
        resolve(code);
      });
    });
  }

  async #show(url: string): Promise<void> {
    const purpose = this.#o.purpose ?? 'the remote MCP server';
    this.#d.logger.info({ url }, `open this URL to authorize access to ${purpose}`);
    this.#d.onLoginUrl?.(url);
    if (this.#d.openUrl !== undefined) {
      await this.#d.openUrl(url);
      return;
    }
    process.stderr.write(`To authorize ${purpose}, open:\n  ${url}\n`);
    if (this.#o.skipBrowser) return;
    // The URL holds the state and the PKCE challenge: it goes to the browser through a page
    // only the user can read, never on the opener's command line (RFC 9700 §4.7 login CSRF).
    // The paths are loaded here, on a login only: the runner does not need them otherwise.
    const { resolvePaths } = await import('../config/index.js');
    const result = await openInBrowser(url, { dir: join(resolvePaths(process.env).stateDir, 'open') });
    if (!result.opened) this.#d.logger.info({ reason: result.reason }, 'no browser opened');
  }

  async #refresh(refreshToken: string): Promise<TokenSet> {
    if (this.#client === undefined) {
      const stored =
        this.#d.secrets === undefined ? undefined : await this.#d.secrets.get(this.#names.client);
      this.#client =
        this.#o.clientId !== undefined
          ? {
              client_id: this.#o.clientId,
              ...(this.#o.clientSecret ? { client_secret: this.#o.clientSecret } : {}),
            }
          : stored === undefined
            ? undefined
            : (JSON.parse(stored) as ClientRegistration);
      if (this.#client === undefined) throw new Error('no client registration stored');
    }
    const set = await this.#tokenRequest({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      ...this.#resourceParam((this.#endpoints as Endpoints).resource),
    });
    // RFC 6749 §6: the old refresh token stays valid unless a new one is issued.
    return set.refreshToken === undefined ? { ...set, refreshToken } : set;
  }

  async #tokenRequest(params: Record<string, string>): Promise<TokenSet> {
    if (this.#closed) throw new Error('closed');
    const client = this.#client as ClientRegistration;
    const res = await postClientForm(
      this.#fetch,
      (this.#endpoints as Endpoints).tokenEndpoint,
      new URLSearchParams(params),
      { id: client.client_id, secret: client.client_secret },
    );
    const body = (await readJson(res).catch(() => undefined)) as Record<string, unknown> | undefined;
    if (!res.ok || typeof body?.['access_token'] !== 'string') {
      throw new SkepError(
        'unauthorized',
        `token request (${params['grant_type']}) failed: ${res.status} ${String(body?.['error'] ?? '')}`,
      );
    }
    const expiresIn = Number(body['expires_in']);
    const lifetime = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : 3600_000;
    const refreshToken = typeof body['refresh_token'] === 'string' ? body['refresh_token'] : undefined;
    if (refreshToken !== undefined && this.#d.secrets !== undefined)
      await putSecret(this.#d.secrets, this.#names.refreshToken, refreshToken);
    const now = this.#now();
    return {
      accessToken: body['access_token'],
      expiresAt: now + lifetime,
      refreshAt: now + Math.max(lifetime - REFRESH_SKEW_MS, lifetime * 0.8),
      ...definedOnly({ refreshToken }),
    };
  }
}

/** The `remote-auth` middleware: the remote server's access token on every request. */
export function createRemoteOAuthMiddleware(client: RemoteOAuthClient, logger: Logger): ProxyMiddleware {
  return {
    name: 'remote-auth',
    async handle(ctx) {
      try {
        ctx.outboundHeaders['authorization'] = `Bearer ${await client.accessToken()}`;
        return undefined;
      } catch (err) {
        logger.warn({ reason: (err as Error).message }, 'no access token for the remote server');
        return {
          status: 503,
          headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '30' },
          body: 'the remote server needs a new login; restart the workload',
        };
      }
    },
  };
}
