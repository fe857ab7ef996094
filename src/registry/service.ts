/**
 * The registry domain service: one registry, `default`, read from the configured source and seen
 * through the native and the v0.1 catalog views (ToolHive's `/api/v1beta/registry` and
 * `/registry/{name}/v0.1`). The source configuration lives in the state store setting
 * `registry.default`, so `skep serve` and CLI commands always agree on it; it is re-read on every
 * call (one indexed SQLite read) and the source is rebuilt when it changed.
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Logger, nearestNames, SkepError, silentLogger } from '../shared/index.js';
import { deleteSetting, readSetting, type Store, writeSetting } from '../store/index.js';
import {
  DEFAULT_CALLBACK_PORT,
  DEFAULT_SCOPES,
  deleteQuietly,
  type RegistryAuthConfig,
  RegistryLogin,
  type RegistryTokenStore,
} from './auth.js';
import { InvalidRegistryError } from './document.js';
import { DEFAULT_FETCH_TIMEOUT_MS, RegistryHttp, SourceFetchError } from './fetch.js';
import type {
  CatalogServer,
  CatalogSkill,
  FoundServer,
  ImageServer,
  NativeRegistry,
  RegistryGroup,
  RegistryInfo,
  RemoteServer,
  SourceType,
} from '../schemas/registry/index.js';
import { normalizePaging, type Page, type RegistryIndex } from './search.js';
import {
  ApiSource,
  BuiltinSource,
  FileSource,
  isAuthFailure,
  type LoadOptions,
  type RegistrySource,
  UrlSource,
} from './sources.js';

export const DEFAULT_REGISTRY = 'default';
const SETTING_KEY = 'registry.default';
/** The registry login's configuration, apart from the source so a login does not rebuild it. */
const AUTH_SETTING_KEY = 'registry.default.auth';
/** ToolHive's 503 `registry_auth_required` message. */
const AUTH_REQUIRED_MESSAGE =
  'Registry authentication required. POST to /api/v1beta/registry/auth/login to authenticate.';
/** How long a URL or API source's content is used before it is revalidated. */
export const DEFAULT_REGISTRY_TTL_MS = 10 * 60 * 1000;

/** The persisted source configuration (absent = built-in). */
export interface StoredSourceConfig {
  type: Exclude<SourceType, 'default'>;
  location: string;
  allow_private_ip: boolean;
}

/** The persisted login configuration; `token_ref` names the stored refresh token after a login. */
export interface StoredAuthConfig extends RegistryAuthConfig {
  token_ref?: string;
}

/** `auth` of `PUT /api/v1beta/registry/default` (ToolHive's; `callback_port` is Skep's). */
export interface AuthUpdate {
  issuer?: string | undefined;
  client_id?: string | undefined;
  audience?: string | undefined;
  scopes?: string[] | undefined;
  callback_port?: number | undefined;
}

/** Body of `PUT /api/v1beta/registry/default` (ToolHive's). */
export interface SourceUpdate {
  url?: string | undefined;
  api_url?: string | undefined;
  local_path?: string | undefined;
  allow_private_ip?: boolean | undefined;
  /** OAuth for a URL or API source; omitted → any existing registry login is removed. */
  auth?: AuthUpdate | undefined;
}

/** The auth fields of a registry list entry (ToolHive's); never a secret. */
export interface AuthInfo {
  auth_status: 'none' | 'configured' | 'authenticated';
  auth_type: '' | 'oauth';
  auth_config?: { issuer: string; client_id: string; audience?: string; scopes: string[] };
}

export interface RegistryServiceOptions {
  store: Store;
  /** Folder for cached copies of URL and API sources. */
  cacheDir: string;
  logger?: Logger;
  /** Deadline of every outgoing request; 5 s by default. */
  fetchTimeoutMs?: number;
  ttlMs?: number;
  now?: () => number;
  /** Where a registry login keeps its refresh token (Skep's secrets store). */
  tokens?: RegistryTokenStore;
  /** Shows the registry login URL (default: printed on stderr, and a browser opened if possible). */
  openUrl?: (url: string) => Promise<void> | void;
  /** How long a registry login may take, ms (default 5 min). */
  loginTimeoutMs?: number;
  /** The one registry's name (default `default`; the MCPRegistry server serves several, one service each). */
  name?: string;
  /**
   * Serve a file source with no entries instead of refusing it: the MCPRegistry server's union of
   * sources is legitimately empty (no workload of the namespace opted in yet).
   */
  allowEmpty?: boolean;
}

export interface ListQuery {
  q?: string | undefined;
  page?: string | number | undefined;
  limit?: string | number | undefined;
}

export class RegistryService {
  readonly #store: Store;
  readonly #logger: Logger;
  readonly #http = new RegistryHttp();
  readonly #timeoutMs: number;
  readonly #ttlMs: number;
  readonly #cacheDir: string;
  readonly #now: () => number;
  readonly #options: RegistryServiceOptions;
  readonly #name: string;
  #current: { key: string; source: RegistrySource } | undefined;
  /** The login of the configured source, while its identity (location, auth config) holds. */
  #login: { key: string; login: RegistryLogin } | undefined;
  #warning: string | undefined;
  #closed = false;

  constructor(options: RegistryServiceOptions) {
    this.#options = options;
    this.#name = options.name ?? DEFAULT_REGISTRY;
    this.#store = options.store;
    this.#logger = options.logger ?? silentLogger;
    this.#timeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.#ttlMs = options.ttlMs ?? DEFAULT_REGISTRY_TTL_MS;
    this.#cacheDir = options.cacheDir;
    this.#now = options.now ?? Date.now;
    if (!(this.#timeoutMs > 0)) throw new TypeError('fetchTimeoutMs must be positive');
  }

  /** The warning of the last load (set while a stale copy is served), for a response header. */
  lastWarning(): string | undefined {
    return this.#warning;
  }

  // ------------------------------------------------------------------ native view

  async listRegistries(): Promise<RegistryInfo[]> {
    return [await this.#info()];
  }

  async getRegistry(name: string): Promise<RegistryInfo & { registry: NativeRegistry }> {
    this.#requireName(name);
    const index = await this.#index();
    return { ...this.#describe(index), registry: index.nativeRegistry() };
  }

  /** `{servers, remote_servers}` as arrays, sorted by name. */
  async listNativeServers(name: string): Promise<{ servers: ImageServer[]; remote_servers: RemoteServer[] }> {
    this.#requireName(name);
    const native = (await this.#index()).nativeRegistry();
    return { servers: Object.values(native.servers), remote_servers: Object.values(native.remote_servers) };
  }

  /**
   * A server by exact name, or by a unique short name (the part after `/`). This is the
   * entry point for the workload engine: `skep run <name>` takes `server` (image, args,
   * env_vars, permissions, transport, target_port) or `remote_server` (url, headers,
   * oauth_config) from the result.
   */
  /** Catalog names close to a mistyped `name`, closest first. */
  async similarServerNames(name: string): Promise<string[]> {
    const names = (await this.#index()).serverNames();
    const shortOf = (full: string) => full.slice(full.lastIndexOf('/') + 1);
    const count = new Map<string, number>();
    for (const full of names) count.set(shortOf(full), (count.get(shortOf(full)) ?? 0) + 1);
    // Said the way `skep run` takes them: the short name where no other server shares it.
    return nearestNames(name, names).map((full) => (count.get(shortOf(full)) === 1 ? shortOf(full) : full));
  }

  async findServer(name: string): Promise<FoundServer> {
    return (await this.#index()).findServer(name);
  }

  /** `findServer` within a named registry (only `default` exists). */
  async getNativeServer(registryName: string, serverName: string): Promise<FoundServer> {
    this.#requireName(registryName);
    return this.findServer(serverName);
  }

  // ------------------------------------------------------------------ catalog view

  async listCatalogServers(query: ListQuery): Promise<Page<CatalogServer>> {
    return (await this.#index()).listServers(query.q, normalizePaging(query.page, query.limit));
  }

  async getCatalogServer(name: string): Promise<CatalogServer> {
    return (await this.#index()).getServer(name);
  }

  async listCatalogSkills(query: ListQuery): Promise<Page<CatalogSkill>> {
    return (await this.#index()).listSkills(query.q, normalizePaging(query.page, query.limit));
  }

  async getCatalogSkill(namespace: string, name: string): Promise<CatalogSkill> {
    return (await this.#index()).getSkill(namespace, name);
  }

  /** The groups with members by full name (Skep's `x/dev.skep/groups` extension of the v0.1 API). */
  async listCatalogGroups(): Promise<readonly RegistryGroup[]> {
    return (await this.#index()).groups;
  }

  // ------------------------------------------------------------------ configuration

  /** The stored source configuration, or `undefined` for the built-in catalog. */
  sourceConfig(): StoredSourceConfig | undefined {
    return readSetting<StoredSourceConfig>(this.#store, SETTING_KEY);
  }

  /**
   * Points the default registry at a new source, after fetching and validating it
   * (as ToolHive's PUT does). Nothing is saved unless the new source loads.
   * Errors: more than one field, bad scheme, missing file → 400; private address without
   * `allow_private_ip` → 403; unreachable or too slow → 504; unusable content → 502.
   */
  async configure(name: string, update: SourceUpdate): Promise<{ type: SourceType }> {
    this.#requireName(name);
    const given = (['url', 'api_url', 'local_path'] as const).filter(
      (k) => update[k] !== undefined && update[k] !== '',
    );
    if (given.length > 1) {
      throw new SkepError(
        'bad_request',
        'cannot specify more than one registry type (url, api_url, or local_path)',
      );
    }
    const allowPrivate = update.allow_private_ip === true;
    const auth = update.auth === undefined || update.auth === null ? undefined : checkAuth(update.auth);
    const field = given[0];
    if (field === undefined) {
      if (auth !== undefined) throw authNotApplicable('the built-in catalog');
      await this.#removeAuth();
      deleteSetting(this.#store, SETTING_KEY);
      this.#current = undefined;
      this.#warning = undefined;
      return { type: 'default' };
    }
    const value = (update[field] ?? '').trim();
    let config: StoredSourceConfig;
    if (field === 'local_path' || value.startsWith('file://')) {
      if (auth !== undefined) throw authNotApplicable('a local file');
      config = { type: 'file', location: checkLocalPath(value), allow_private_ip: false };
    } else {
      const url = checkUrl(value, field, allowPrivate);
      if (auth !== undefined) checkUrl(auth.issuer, 'auth.issuer', allowPrivate);
      const type = field === 'api_url' ? 'api' : await this.#detectUrlType(url, allowPrivate);
      config = { type, location: url, allow_private_ip: allowPrivate };
    }
    // Everything is checked before anything is saved (the reference saves the source first).
    const login = auth === undefined ? undefined : this.#loginFor(config, auth);
    if (login !== undefined && auth !== undefined) {
      try {
        await login.discover();
      } catch (err) {
        throw new SkepError(
          'bad_request',
          `failed to configure registry auth: OIDC discovery failed for issuer ${auth.issuer}: ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
    const source = this.#build(config, login);
    try {
      await source.load({ force: true, noStale: true });
    } catch (err) {
      // With a login configured, a registry that asks for a token before the login is
      // expected: its content is read after the login (as the reference defers the check).
      if (login === undefined || !isAuthFailure(err)) throw toConfigureError(err, value);
    }
    const previous = this.#authConfig();
    const previousSource = this.sourceConfig();
    if (auth === undefined) {
      await this.#removeAuth();
    } else {
      const sameLogin =
        previous?.token_ref !== undefined &&
        previousSource?.location === config.location &&
        identityKey(previous) === identityKey(auth);
      if (!sameLogin) await this.#removeAuth();
      writeSetting(
        this.#store,
        AUTH_SETTING_KEY,
        sameLogin ? { ...auth, token_ref: previous.token_ref } : auth,
      );
    }
    writeSetting(this.#store, SETTING_KEY, config);
    this.#current = undefined;
    this.#warning = undefined;
    this.#logger.info(
      { type: config.type, source: config.location, auth: auth === undefined ? 'none' : 'oauth' },
      'registry source changed',
    );
    return { type: config.type };
  }

  /** Drops the login configuration and its stored refresh token. */
  async #removeAuth(): Promise<void> {
    const auth = this.#authConfig();
    if (auth === undefined) return;
    if (auth.token_ref !== undefined) await deleteQuietly(this.#options.tokens, auth.token_ref);
    deleteSetting(this.#store, AUTH_SETTING_KEY);
    this.#login?.login.close();
    this.#login = undefined;
  }

  /** Reloads the source now, ignoring the TTL; fails if the source cannot be read. */
  async refresh(name: string): Promise<{ status: 'refreshed'; type: SourceType; server_count: number }> {
    this.#requireName(name);
    const index = await this.#index({ force: true, noStale: true });
    return { status: 'refreshed', type: this.#source().type, server_count: index.serverCount };
  }

  // ------------------------------------------------------------------ login (as ToolHive's)

  /**
   * Runs the OAuth login for the configured source (interactive: the URL is shown to the
   * user, who logs in in a browser) and stores the refresh token. Resolves when done.
   */
  async loginRegistry(): Promise<{ status: 'authenticated' }> {
    const { config, auth } = this.#requireAuth();
    const login = this.#loginFor(config, auth);
    await login.login();
    if (
      this.#options.tokens !== undefined &&
      (await this.#options.tokens.get(login.secretName)) === undefined
    )
      this.#logger.warn(
        'the authorization server issued no refresh token (offline_access); the registry login lasts as long as its access token',
      );
    const current = this.#authConfig();
    if (current !== undefined && identityKey(current) === identityKey(auth))
      writeSetting(this.#store, AUTH_SETTING_KEY, { ...current, token_ref: login.secretName });
    // Content read before the login (or anonymously) is not kept: read it again with the token.
    this.#source().forget();
    this.#warning = undefined;
    this.#logger.info({ registry: config.location }, 'registry login complete');
    return { status: 'authenticated' };
  }

  /** Forgets the login: the stored refresh token, the tokens in memory and the fetched content. */
  async logoutRegistry(): Promise<{ status: 'logged_out' }> {
    const { config, auth } = this.#requireAuth();
    await this.#loginFor(config, auth).logout();
    const { token_ref: _gone, ...rest } = auth;
    writeSetting(this.#store, AUTH_SETTING_KEY, rest);
    this.#source().forget();
    this.#warning = undefined;
    this.#logger.info({ registry: config.location }, 'registry logout');
    return { status: 'logged_out' };
  }

  #requireAuth(): { config: StoredSourceConfig; auth: StoredAuthConfig } {
    const config = this.sourceConfig();
    const auth = this.#authConfig();
    if (config === undefined || auth === undefined || config.type === 'file') {
      throw new SkepError(
        'registry_auth_not_configured',
        'registry authentication is not configured: PUT /api/v1beta/registry/default with a url or api_url ' +
          'and auth {issuer, client_id} first',
      );
    }
    return { config, auth };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#login?.login.close();
    await this.#http.close();
  }

  // ------------------------------------------------------------------ internals

  #requireName(name: string): void {
    if (name !== this.#name) {
      throw new SkepError(
        'registry_not_found',
        `registry ${name} does not exist; the only registry is "${this.#name}"`,
      );
    }
  }

  async #info(): Promise<RegistryInfo> {
    return this.#describe(await this.#index());
  }

  #describe(index: RegistryIndex): RegistryInfo {
    const source = this.#source();
    return {
      name: this.#name,
      type: source.type,
      source: source.location,
      version: index.version,
      last_updated: index.lastUpdated,
      // Deliberate: counts every server; the reference counts container servers only.
      server_count: index.serverCount,
      ...this.authInfo(),
    };
  }

  /**
   * `auth_status`: `none` (no login configured), `configured` (no stored login), or
   * `authenticated` (a refresh token is stored, or this process holds a token).
   */
  authInfo(): AuthInfo {
    const auth = this.#authConfig();
    if (auth === undefined) return { auth_status: 'none', auth_type: '' };
    return {
      auth_status: auth.token_ref !== undefined ? 'authenticated' : 'configured',
      auth_type: 'oauth',
      auth_config: {
        issuer: auth.issuer,
        client_id: auth.client_id,
        ...(auth.audience !== undefined ? { audience: auth.audience } : {}),
        scopes: [...auth.scopes],
      },
    };
  }

  #authConfig(): StoredAuthConfig | undefined {
    return readSetting<StoredAuthConfig>(this.#store, AUTH_SETTING_KEY);
  }

  #source(): RegistrySource {
    const config = this.sourceConfig();
    const auth = this.#authConfig();
    const key =
      config === undefined ? 'builtin' : JSON.stringify([config, auth === undefined ? null : identity(auth)]);
    if (this.#current?.key !== key) {
      const login = config === undefined || auth === undefined ? undefined : this.#loginFor(config, auth);
      this.#current = {
        key,
        source: config === undefined ? new BuiltinSource() : this.#build(config, login),
      };
    }
    return this.#current.source;
  }

  /** The login of a source and auth configuration: kept while both stay the same. */
  #loginFor(config: StoredSourceConfig, auth: RegistryAuthConfig): RegistryLogin {
    const key = JSON.stringify([config.location, identity(auth)]);
    if (this.#login?.key === key) return this.#login.login;
    this.#login?.login.close();
    const login = new RegistryLogin(config.location, identity(auth), {
      store: this.#options.tokens,
      logger: this.#logger,
      now: this.#now,
      ...(this.#options.openUrl !== undefined ? { openUrl: this.#options.openUrl } : {}),
      ...(this.#options.loginTimeoutMs !== undefined ? { loginTimeoutMs: this.#options.loginTimeoutMs } : {}),
    });
    this.#login = { key, login };
    return login;
  }

  #build(config: StoredSourceConfig, login?: RegistryLogin): RegistrySource {
    if (config.type === 'file') return new FileSource(config.location, this.#options.allowEmpty === true);
    const options = {
      http: this.#http,
      allowPrivate: config.allow_private_ip,
      timeoutMs: this.#timeoutMs,
      ttlMs: this.#ttlMs,
      cacheDir: this.#cacheDir,
      now: this.#now,
      ...(login !== undefined
        ? { authorization: () => login.authorization(() => this.#loginLost(login)) }
        : {}),
    };
    return config.type === 'api'
      ? new ApiSource(config.location, options)
      : new UrlSource(config.location, options);
  }

  /** A stored login stopped working (refresh token refused or gone): the status says so. */
  async #loginLost(login: RegistryLogin): Promise<void> {
    const auth = this.#authConfig();
    if (auth?.token_ref === undefined || this.#login?.login !== login) return;
    const { token_ref: _gone, ...rest } = auth;
    writeSetting(this.#store, AUTH_SETTING_KEY, rest);
    await deleteQuietly(this.#options.tokens, login.secretName).catch((err: unknown) =>
      this.#logger.warn({ err }, 'cannot delete the refused registry refresh token'),
    );
  }

  async #index(options: LoadOptions = {}): Promise<RegistryIndex> {
    if (this.#closed) throw new SkepError('unavailable', 'the registry service is closed');
    const source = this.#source();
    try {
      const result = await source.load(options);
      if (result.warning !== undefined && result.warning !== this.#warning) this.#logger.warn(result.warning);
      this.#warning = result.warning;
      return result.index;
    } catch (err) {
      if (isAuthFailure(err)) throw this.#authRequired(err, source);
      throw toReadError(err, source);
    }
  }

  /**
   * As in ToolHive: with no usable token, or a 401/403 from the registry, 503
   * `registry_auth_required`. The body also carries the auth fields of the list entry, so
   * a caller sees `auth_status` even though the content cannot be read.
   */
  #authRequired(err: SourceFetchError, source: RegistrySource): SkepError {
    const info = this.authInfo();
    const message =
      info.auth_status === 'none'
        ? `the registry at ${source.location} requires authentication (HTTP ${err.status}): PUT /api/v1beta/registry/default ` +
          'with auth {issuer, client_id}, then POST /api/v1beta/registry/auth/login'
        : info.auth_status === 'authenticated'
          ? `the registry at ${source.location} refused the access token (HTTP ${err.status}); ` +
            'POST /api/v1beta/registry/auth/login to log in again, or ask for access'
          : AUTH_REQUIRED_MESSAGE;
    return new SkepError('registry_auth_required', message, {
      cause: err,
      details: { ...info },
    });
  }

  /**
   * A `url` that does not end in `.json` may be the base URL of a registry API: probe
   * `GET <url>/v0.1/servers?limit=1` and call it `api` when it answers like one
   * (ToolHive's probe: 2xx with a `servers` array and a `metadata` object, or 401/403).
   */
  async #detectUrlType(url: string, allowPrivate: boolean): Promise<'url' | 'api'> {
    if (new URL(url).pathname.toLowerCase().endsWith('.json')) return 'url';
    try {
      const res = await this.#http.fetch(`${url.replace(/\/+$/, '')}/v0.1/servers?limit=1&version=latest`, {
        allowPrivate,
        timeoutMs: this.#timeoutMs,
      });
      if (res.status === 401 || res.status === 403) return 'api';
      if (res.status >= 200 && res.status < 300) {
        const body = JSON.parse(res.text) as { servers?: unknown; metadata?: unknown };
        if (Array.isArray(body.servers) && typeof body.metadata === 'object' && body.metadata !== null)
          return 'api';
      }
    } catch {
      // not an API (or not reachable): loading it as a URL gives the precise error
    }
    return 'url';
  }
}

/** What a login depends on (a change to any of it means a new login). */
function identity(auth: RegistryAuthConfig): RegistryAuthConfig {
  return {
    issuer: auth.issuer,
    client_id: auth.client_id,
    ...(auth.audience !== undefined ? { audience: auth.audience } : {}),
    scopes: [...auth.scopes],
    callback_port: auth.callback_port,
  };
}

function identityKey(auth: RegistryAuthConfig): string {
  return JSON.stringify(identity(auth));
}

/** As in ToolHive, issuer and client_id are required; scopes default to `openid offline_access`. */
function checkAuth(update: AuthUpdate): RegistryAuthConfig {
  const issuer = update.issuer?.trim() ?? '';
  const clientId = update.client_id?.trim() ?? '';
  if (issuer === '' || clientId === '')
    throw new SkepError('bad_request', 'auth.issuer and auth.client_id are required');
  const audience = update.audience?.trim();
  const scopes = (update.scopes ?? []).map((s) => s.trim()).filter((s) => s !== '');
  const port = update.callback_port ?? DEFAULT_CALLBACK_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new SkepError(
      'bad_request',
      'auth.callback_port: must be a port number (0–65535; 0 picks a free one)',
    );
  return {
    issuer,
    client_id: clientId,
    ...(audience !== undefined && audience !== '' ? { audience } : {}),
    scopes: scopes.length > 0 ? scopes : [...DEFAULT_SCOPES],
    callback_port: port,
  };
}

function authNotApplicable(what: string): SkepError {
  return new SkepError(
    'bad_request',
    `auth: registry authentication applies to a url or api_url source; ${what} needs none (omit auth)`,
  );
}

function checkUrl(value: string, field: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SkepError('bad_request', `${field}: ${JSON.stringify(value)} is not a URL`);
  }
  if (url.protocol === 'https:') return url.toString();
  if (url.protocol === 'http:' && allowPrivate) return url.toString();
  throw new SkepError(
    'bad_request',
    `${field}: the registry URL must start with https:// (http:// is accepted only with allow_private_ip)`,
  );
}

function checkLocalPath(value: string): string {
  let path = value;
  if (path.startsWith('file://')) {
    try {
      path = fileURLToPath(path);
    } catch {
      throw new SkepError('bad_request', `local_path: ${JSON.stringify(value)} is not a valid file:// URL`);
    }
  }
  if (path === '') throw new SkepError('bad_request', 'local_path: is empty');
  const absolute = isAbsolute(path) ? path : resolve(path);
  if (!existsSync(absolute) || !statSync(absolute).isFile()) {
    throw new SkepError(
      'bad_request',
      `local_path: registry file ${absolute} does not exist or is not a file`,
    );
  }
  return absolute;
}

/** Errors while setting a source (ToolHive's error mapping). */
function toConfigureError(err: unknown, input: string): SkepError {
  if (err instanceof SkepError) return err;
  if (isAuthFailure(err)) {
    return new SkepError(
      'registry_invalid',
      `registry at ${input} requires authentication (HTTP ${err.status}): add auth {issuer, client_id} to this ` +
        'request, then POST /api/v1beta/registry/auth/login',
      { cause: err },
    );
  }
  if (err instanceof InvalidRegistryError)
    return new SkepError('registry_invalid', err.message, { cause: err });
  if (err instanceof SourceFetchError) {
    switch (err.kind) {
      case 'private':
        return new SkepError('registry_private_address', err.message, { cause: err });
      case 'status':
      case 'too_large':
        return new SkepError('registry_invalid', `registry at ${input} is not usable: ${err.message}`, {
          cause: err,
        });
      default:
        return new SkepError('registry_unavailable', `registry at ${input} is unreachable: ${err.message}`, {
          cause: err,
        });
    }
  }
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
    return new SkepError('bad_request', `registry file cannot be read: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return new SkepError('internal_error', `registry at ${input} could not be loaded`, { cause: err });
}

/** Errors while reading the configured source with no good copy to fall back on. */
function toReadError(err: unknown, source: RegistrySource): SkepError {
  if (err instanceof SkepError) return err;
  const where = source.location === '' ? 'the built-in catalog' : source.location;
  if (err instanceof InvalidRegistryError)
    return new SkepError('registry_invalid', err.message, { cause: err });
  if (err instanceof SourceFetchError || (err as NodeJS.ErrnoException).code !== undefined) {
    return new SkepError(
      'unavailable',
      `registry source ${where} is unavailable: ${(err as Error).message}`,
      { cause: err },
    );
  }
  return new SkepError('internal_error', `registry source ${where} could not be loaded`, { cause: err });
}
