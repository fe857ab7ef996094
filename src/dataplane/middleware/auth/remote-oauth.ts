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
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { AuthorizationServer } from 'oauth4webapi';
import {
  AuthorizationServerMetadataError,
  authorizationCodeGrant,
  authorizationRequest,
  type ClientCredentials,
  checkAuthorizationResponse,
  discoverAuthorizationServer,
  discoverProtectedResource,
  OAuthResponseError,
  refreshGrant,
  registerClient,
  type TokenResponse,
} from '../../../protocol/oauth/index.js';
import type { ProxyMiddleware } from '../../proxy/index.js';
import {
  authorizationEndpointRefusal,
  definedOnly,
  findOutboundRefusal,
  type Logger,
  openInBrowser,
  outboundFetch,
  SkepError,
} from '../../../shared/index.js';
import { configuredEndpointsPolicy, type FetchLike } from './http.js';

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
  /** The authorization server's issuer, when discovered or configured. */
  issuer?: string;
  /** Its metadata (RFC 8414), or one built from the configured endpoints. */
  server: AuthorizationServer;
  authorizationEndpoint: string;
  resource: string;
}

/** The client registration kept in the secrets store (RFC 7591 §3.2.1 fields). */
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

/**
 * The authorization endpoint is where the user's browser is sent, and a remote server's
 * metadata chooses it: only https (http on loopback) is used (RFC 6749 §3.1, MCP 2025-06-18
 * "Communication Security"), checked before anything is registered, fetched or opened (a
 * `file:` or `javascript:` URL handed to the desktop's opener runs code: CVE-2025-6514).
 */
function checkedEndpoint(
  value: string,
  source: string,
  code: 'bad_gateway' | 'invalid_config' = 'bad_gateway',
): string {
  const refusal = authorizationEndpointRefusal(value);
  if (refusal !== undefined)
    throw new SkepError(
      code,
      `${source} names the authorization endpoint ${JSON.stringify(value)}, which is refused: ${refusal}`,
    );
  return value;
}

function credentialsOf(reg: ClientRegistration): ClientCredentials {
  return { clientId: reg.client_id, ...(reg.client_secret ? { clientSecret: reg.client_secret } : {}) };
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

  async #discover(): Promise<Endpoints> {
    const o = this.#o;
    if (o.authorizeUrl !== undefined && o.tokenUrl !== undefined) {
      const authorizationEndpoint = checkedEndpoint(
        o.authorizeUrl,
        'remote_auth_config.authorize_url',
        'invalid_config',
      );
      return {
        // No metadata: the configured endpoints stand for it (the issuer only identifies it).
        server: {
          issuer: o.issuer ?? new URL(o.tokenUrl).origin,
          authorization_endpoint: authorizationEndpoint,
          token_endpoint: o.tokenUrl,
        },
        authorizationEndpoint,
        resource: o.resource ?? o.remoteUrl,
      };
    }
    let issuer = o.issuer;
    let resource = o.resource;
    if (issuer === undefined) {
      const metadata = await discoverProtectedResource(o.remoteUrl, this.#fetch);
      const first = metadata?.authorizationServers[0];
      if (first === undefined)
        throw new SkepError(
          'bad_gateway',
          `${o.remoteUrl} publishes no OAuth protected-resource metadata; set remote_auth_config.issuer`,
        );
      issuer = first;
      resource ??= metadata?.resource;
    }
    let found: Awaited<ReturnType<typeof discoverAuthorizationServer>>;
    try {
      found = await discoverAuthorizationServer(issuer, this.#fetch);
    } catch (err) {
      if (err instanceof AuthorizationServerMetadataError)
        throw new SkepError('bad_gateway', err.message, { cause: err });
      throw err;
    }
    if (found === undefined)
      throw new SkepError('bad_gateway', `no authorization server metadata found for ${issuer}`);
    const { metadata, url } = found;
    const authorizationEndpoint =
      o.authorizeUrl === undefined
        ? checkedEndpoint(
            metadata.authorization_endpoint as string,
            `the authorization server metadata at ${url}`,
          )
        : checkedEndpoint(o.authorizeUrl, 'remote_auth_config.authorize_url', 'invalid_config');
    return {
      issuer,
      server: { ...metadata, ...(o.tokenUrl === undefined ? {} : { token_endpoint: o.tokenUrl }) },
      authorizationEndpoint,
      resource: resource ?? o.remoteUrl,
    };
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
    const server = (this.#endpoints as Endpoints).server;
    if (typeof server.registration_endpoint !== 'string')
      throw new SkepError(
        'invalid_config',
        'the authorization server has no registration endpoint; set remote_auth_config.client_id',
      );
    let registered: ClientCredentials;
    try {
      // RFC 7591 §2/§3.1: a public native client (PKCE, no secret).
      registered = await registerClient(
        server,
        {
          client_name: `Skep (${this.#o.workload})`,
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
          application_type: 'native',
          ...(this.#o.scopes?.length ? { scope: this.#o.scopes.join(' ') } : {}),
        },
        this.#fetch,
      );
    } catch (err) {
      if (!(err instanceof OAuthResponseError)) throw err;
      if (err.field === 'client_id')
        throw new SkepError('bad_gateway', 'client registration returned no client_id', { cause: err });
      throw new SkepError('bad_gateway', `client registration failed (${err.status} ${err.error ?? ''})`, {
        cause: err,
      });
    }
    const reg: ClientRegistration = {
      client_id: registered.clientId,
      ...definedOnly({ client_secret: registered.clientSecret }),
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
      const request = await authorizationRequest(
        endpoints.authorizationEndpoint,
        client.client_id,
        redirectUri,
        {
          ...definedOnly({ extra: this.#o.oauthParams }),
          params: {
            ...this.#resourceParam(endpoints.resource),
            ...(this.#o.scopes?.length ? { scope: this.#o.scopes.join(' ') } : {}),
          },
        },
      );
      const answer = this.#awaitCallback(callback, request.state, endpoints.issuer, client.client_id);
      await this.#show(request.url.href);
      const parameters = await answer;
      return await this.#tokenRequest('authorization_code', (credentials) =>
        authorizationCodeGrant(
          endpoints.server,
          credentials,
          parameters,
          redirectUri,
          request.codeVerifier,
          this.#resourceParam(endpoints.resource),
          this.#fetch,
        ),
      );
    } finally {
      callback.closeAllConnections();
      callback.close();
    }
  }

  /** The authorization response's parameters, once the redirect back carries a code. */
  #awaitCallback(
    server: Server,
    state: string,
    issuer: string | undefined,
    clientId: string,
  ): Promise<URLSearchParams> {
    const timeoutMs = this.#o.loginTimeoutMs ?? 300_000;
    return new Promise<URLSearchParams>((resolve, reject) => {
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
        const fail = (why: string) => {
          res
            .writeHead(400, { 'content-type': 'text/plain' })
            .end(`Login failed: ${why}. You can close this window.`);
        };
        const result = checkAuthorizationResponse(issuer, clientId, u.searchParams, state);
        if (result.kind === 'invalid') return fail(result.problem);
        if (result.kind === 'error') {
          fail(result.error);
          clearTimeout(timer);
          reject(
            new SkepError('unauthorized', `the authorization server refused the login: ${result.error}`),
          );
          return;
        }
        res
          .writeHead(200, { 'content-type': 'text/plain' })
          .end('Login complete. You can close this window.');
        clearTimeout(timer);
        this.#abort.signal.removeEventListener('abort', stop);
        resolve(result.parameters);
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
    const { resolvePaths } = await import('../../../config/index.js');
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
    const endpoints = this.#endpoints as Endpoints;
    const set = await this.#tokenRequest('refresh_token', (credentials) =>
      refreshGrant(
        endpoints.server,
        credentials,
        refreshToken,
        this.#resourceParam(endpoints.resource),
        this.#fetch,
      ),
    );
    // RFC 6749 §6: the old refresh token stays valid unless a new one is issued.
    return set.refreshToken === undefined ? { ...set, refreshToken } : set;
  }

  /** Runs one token request; a refusal or unusable answer is `unauthorized` naming the grant. */
  async #tokenRequest(
    grantType: string,
    send: (credentials: ClientCredentials) => Promise<TokenResponse>,
  ): Promise<TokenSet> {
    if (this.#closed) throw new Error('closed');
    let tokens: TokenResponse;
    try {
      tokens = await send(credentialsOf(this.#client as ClientRegistration));
    } catch (err) {
      if (!(err instanceof OAuthResponseError)) throw err;
      throw new SkepError(
        'unauthorized',
        `token request (${grantType}) failed: ${err.status} ${err.error ?? ''}`,
        { cause: err },
      );
    }
    const lifetime =
      tokens.expiresIn !== undefined && tokens.expiresIn > 0 ? tokens.expiresIn * 1000 : 3600_000;
    const refreshToken = tokens.refreshToken;
    if (refreshToken !== undefined && this.#d.secrets !== undefined)
      await putSecret(this.#d.secrets, this.#names.refreshToken, refreshToken);
    const now = this.#now();
    return {
      accessToken: tokens.accessToken,
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
