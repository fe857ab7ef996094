/**
 * Registry authentication (as ToolHive's registry login and `PUT /api/v1beta/registry` have it): a
 * URL or v0.1 API source that requires a token is read with an OAuth access token of the user. The
 * login is the authorization code flow with PKCE S256 and a loopback redirect, run by the same
 * OAuth client as the remote-server login (`auth/remote-oauth.ts`, loaded only when registry
 * authentication is configured). The refresh token lives in Skep's secrets store under
 * `REGISTRY_OAUTH_<8 hex>` (the reference's name: the first 4 bytes of SHA-256(registry URL NUL
 * issuer)); the access token only in memory, refreshed before it expires. Reading the registry
 * never starts a login: without a usable token the request goes out without one, and the registry's
 * 401/403 becomes `registry_auth_required`.
 */
import { createHash } from 'node:crypto';
import type { RemoteOAuthClient, SecretStore } from '../dataplane/middleware/auth/index.js';
import { isSkepError, type Logger, SkepError } from '../shared/index.js';

/** As in ToolHive: scopes default to `openid offline_access`; the callback port to 8666. */
export const DEFAULT_SCOPES: readonly string[] = ['openid', 'offline_access'];
export const DEFAULT_CALLBACK_PORT = 8666;

/** What identifies a registry login: a change to any of it needs a new login. */
export interface RegistryAuthConfig {
  issuer: string;
  client_id: string;
  audience?: string;
  scopes: string[];
  /** Port of the loopback redirect URI `http://127.0.0.1:<port>/callback`; 0 picks a free one. */
  callback_port: number;
}

/** The secrets the login keeps: `SecretsService` fits, with a check that it can write. */
export interface RegistryTokenStore extends SecretStore {
  delete(name: string): Promise<void>;
  /** Throws a `SkepError` saying why when the store cannot keep a refresh token. */
  assertWritable(): void;
}

export interface RegistryLoginDeps {
  store: RegistryTokenStore | undefined;
  logger: Logger;
  now: () => number;
  /** Shows the login URL; by default it is printed (and a browser opened when there is a display). */
  openUrl?: (url: string) => Promise<void> | void;
  /** How long the user has to log in, ms (default 5 min). */
  loginTimeoutMs?: number;
}

/** The secret holding the refresh token of a registry login (as ToolHive keeps it). */
export function refreshTokenSecretName(location: string, issuer: string): string {
  const hex = createHash('sha256').update(`${location}\u0000${issuer}`).digest('hex').slice(0, 8);
  return `REGISTRY_OAUTH_${hex}`;
}

/**
 * The OAuth state of one registry source: login, logout, and the bearer token of its
 * requests. One per (source location, auth configuration); dropped when either changes.
 */
export class RegistryLogin {
  readonly secretName: string;
  readonly #location: string;
  readonly #config: RegistryAuthConfig;
  readonly #deps: RegistryLoginDeps;
  #client: Promise<RemoteOAuthClient> | undefined;
  /** The client holds tokens (after a login or a resumed refresh token). */
  #ready = false;
  #loggingIn: Promise<void> | undefined;
  #resuming: Promise<boolean> | undefined;
  #closed = false;

  constructor(location: string, config: RegistryAuthConfig, deps: RegistryLoginDeps) {
    this.#location = location;
    this.#config = config;
    this.#deps = deps;
    this.secretName = refreshTokenSecretName(location, config.issuer);
  }

  /** OpenID Connect discovery on the issuer (checked when the configuration is saved). */
  async discover(): Promise<void> {
    await (await this.#oauth()).discover();
  }

  /**
   * `Bearer <token>` for a registry request, or `undefined` when there is no usable login
   * (none yet, or the refresh token was refused). `onRefused` is told when a stored login
   * stopped working, so the status can say `configured` again.
   */
  async authorization(onRefused: () => Promise<void>): Promise<string | undefined> {
    if (this.#closed || this.#deps.store === undefined) return undefined;
    try {
      const client = await this.#oauth();
      if (!this.#ready) {
        // One refresh at a time: two refreshes with one rotating token can revoke the grant.
        this.#resuming ??= client.resume().finally(() => {
          this.#resuming = undefined;
        });
        if (!(await this.#resuming)) {
          await onRefused();
          return undefined;
        }
        this.#ready = true;
      }
      return `Bearer ${await client.accessToken()}`;
    } catch (err) {
      if (isSkepError(err) && err.code === 'secrets_not_setup') return undefined;
      if (unreachable(err)) {
        throw new SkepError(
          'unavailable',
          `the registry's authorization server ${this.#config.issuer} cannot be reached: ${(err as Error).message}`,
          { cause: err },
        );
      }
      if (isSkepError(err) && err.code !== 'unauthorized') throw err;
      // The authorization server refused the refresh, or the token expired without one: the login is over.
      this.#deps.logger.warn({ reason: (err as Error).message }, 'registry login expired; log in again');
      this.#reset();
      await onRefused();
      return undefined;
    }
  }

  /**
   * The interactive login (one at a time: a second call joins the running one). Resolves
   * when the user has logged in and the refresh token is stored.
   */
  login(): Promise<void> {
    this.#loggingIn ??= this.#login().finally(() => {
      this.#loggingIn = undefined;
    });
    return this.#loggingIn;
  }

  async #login(): Promise<void> {
    const store = this.#deps.store;
    if (store === undefined)
      throw new SkepError('secrets_not_setup', 'registry login needs the secrets store to keep its token');
    store.assertWritable();
    this.#reset();
    try {
      await (await this.#oauth()).login();
      this.#ready = true;
    } catch (err) {
      this.#reset();
      if (isSkepError(err) && err.code === 'unauthorized')
        throw new SkepError('bad_gateway', `registry login failed: ${err.message}`, { cause: err });
      if (isSkepError(err)) throw err;
      if (this.#closed) throw new SkepError('unavailable', 'registry login aborted: the server is stopping');
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new SkepError(
          'conflict',
          `registry login: the callback port ${this.#config.callback_port} is in use (another login?); ` +
            'free it, or set auth.callback_port to a port your identity provider accepts',
          { cause: err },
        );
      }
      throw new SkepError(
        'bad_gateway',
        `registry login failed: ${this.#config.issuer} cannot be reached: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  /** Forgets the tokens: memory and the stored refresh token. */
  async logout(): Promise<void> {
    this.#reset();
    await deleteQuietly(this.#deps.store, this.secretName);
  }

  close(): void {
    this.#closed = true;
    this.#reset();
  }

  #reset(): void {
    this.#ready = false;
    const client = this.#client;
    this.#client = undefined;
    void client?.then((c) => c.close()).catch(() => undefined);
  }

  #oauth(): Promise<RemoteOAuthClient> {
    this.#client ??= this.#createClient();
    return this.#client;
  }

  async #createClient(): Promise<RemoteOAuthClient> {
    // Loaded only when a registry login is configured (the OAuth client is not small).
    const { RemoteOAuthClient } = await import('../dataplane/middleware/auth/remote-oauth.js');
    const c = this.#config;
    return new RemoteOAuthClient(
      {
        workload: 'registry',
        remoteUrl: this.#location,
        issuer: c.issuer,
        clientId: c.client_id,
        scopes: c.scopes,
        callbackPort: c.callback_port,
        // RFC 8707: the audience is the resource indicator; without one, none is sent
        // (an authorization server may refuse a resource it does not know).
        ...(c.audience !== undefined ? { resource: c.audience } : {}),
        sendResource: c.audience !== undefined,
        secretNames: { client: `${this.secretName}_CLIENT`, refreshToken: this.secretName },
        purpose: `the registry ${this.#location}`,
        ...(this.#deps.loginTimeoutMs !== undefined ? { loginTimeoutMs: this.#deps.loginTimeoutMs } : {}),
      },
      {
        logger: this.#deps.logger,
        secrets: this.#deps.store,
        now: this.#deps.now,
        ...(this.#deps.openUrl !== undefined ? { openUrl: this.#deps.openUrl } : {}),
      },
    );
  }
}

/** A failure to reach the authorization server (network, deadline), as opposed to its refusal. */
function unreachable(err: unknown): boolean {
  if (isSkepError(err)) return err.code === 'gateway_timeout' || err.code === 'unavailable';
  const name = (err as Error | undefined)?.name;
  return err instanceof TypeError || name === 'TimeoutError' || name === 'AbortError';
}

/** Deletes a secret; a missing secret or an unconfigured store is not an error here. */
export async function deleteQuietly(store: RegistryTokenStore | undefined, name: string): Promise<void> {
  if (store === undefined) return;
  try {
    await store.delete(name);
  } catch (err) {
    if (isSkepError(err) && (err.code === 'secret_not_found' || err.code === 'secrets_not_setup')) return;
    throw err;
  }
}
