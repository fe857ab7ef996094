/**
 * The registry domain service: one registry, `default`, read from the configured source
 * and seen through the native and the v0.1 catalog views (seed "Registries"; reference
 * management-api §1.2, §1.3). The source configuration lives in the state store setting
 * `registry.default`, so `skep serve` and CLI commands always agree on it; it is re-read
 * on every call (one indexed SQLite read) and the source is rebuilt when it changed.
 */
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Logger, SkepError, silentLogger } from '../shared/index.js';
import { deleteSetting, readSetting, type Store, writeSetting } from '../store/index.js';
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
} from './model.js';
import { normalizePaging, type Page, type RegistryIndex } from './search.js';
import {
  ApiSource,
  BuiltinSource,
  FileSource,
  type LoadOptions,
  type RegistrySource,
  UrlSource,
} from './sources.js';

export const DEFAULT_REGISTRY = 'default';
const SETTING_KEY = 'registry.default';
/** How long a URL or API source's content is used before it is revalidated. */
export const DEFAULT_REGISTRY_TTL_MS = 10 * 60 * 1000;

/** The persisted source configuration (absent = built-in). */
export interface StoredSourceConfig {
  type: Exclude<SourceType, 'default'>;
  location: string;
  allow_private_ip: boolean;
}

/** Body of `PUT /api/v1beta/registry/default` (reference §1.2). */
export interface SourceUpdate {
  url?: string | undefined;
  api_url?: string | undefined;
  local_path?: string | undefined;
  allow_private_ip?: boolean | undefined;
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
  #current: { key: string; source: RegistrySource } | undefined;
  #warning: string | undefined;
  #closed = false;

  constructor(options: RegistryServiceOptions) {
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
    requireDefault(name);
    const index = await this.#index();
    return { ...this.#describe(index), registry: index.nativeRegistry() };
  }

  /** `{servers, remote_servers}` as arrays, sorted by name. */
  async listNativeServers(name: string): Promise<{ servers: ImageServer[]; remote_servers: RemoteServer[] }> {
    requireDefault(name);
    const native = (await this.#index()).nativeRegistry();
    return { servers: Object.values(native.servers), remote_servers: Object.values(native.remote_servers) };
  }

  /**
   * A server by exact name, or by a unique short name (the part after `/`). This is the
   * entry point for the workload engine: `skep run <name>` takes `server` (image, args,
   * env_vars, permissions, transport, target_port) or `remote_server` (url, headers,
   * oauth_config) from the result.
   */
  async findServer(name: string): Promise<FoundServer> {
    return (await this.#index()).findServer(name);
  }

  /** `findServer` within a named registry (only `default` exists). */
  async getNativeServer(registryName: string, serverName: string): Promise<FoundServer> {
    requireDefault(registryName);
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
   * (reference §1.2, PUT). Nothing is saved unless the new source loads.
   * Errors: more than one field, bad scheme, missing file → 400; private address without
   * `allow_private_ip` → 403; unreachable or too slow → 504; unusable content → 502.
   */
  async configure(name: string, update: SourceUpdate): Promise<{ type: SourceType }> {
    requireDefault(name);
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
    const field = given[0];
    if (field === undefined) {
      deleteSetting(this.#store, SETTING_KEY);
      this.#current = undefined;
      this.#warning = undefined;
      return { type: 'default' };
    }
    const value = (update[field] ?? '').trim();
    let config: StoredSourceConfig;
    if (field === 'local_path' || value.startsWith('file://')) {
      config = { type: 'file', location: checkLocalPath(value), allow_private_ip: false };
    } else {
      const url = checkUrl(value, field, allowPrivate);
      const type = field === 'api_url' ? 'api' : await this.#detectUrlType(url, allowPrivate);
      config = { type, location: url, allow_private_ip: allowPrivate };
    }
    const source = this.#build(config);
    try {
      await source.load({ force: true, noStale: true });
    } catch (err) {
      throw toConfigureError(err, value);
    }
    writeSetting(this.#store, SETTING_KEY, config);
    this.#current = { key: JSON.stringify(config), source };
    this.#warning = undefined;
    this.#logger.info({ type: config.type, source: config.location }, 'registry source changed');
    return { type: config.type };
  }

  /** Reloads the source now, ignoring the TTL; fails if the source cannot be read. */
  async refresh(name: string): Promise<{ status: 'refreshed'; type: SourceType; server_count: number }> {
    requireDefault(name);
    const index = await this.#index({ force: true, noStale: true });
    return { status: 'refreshed', type: this.#source().type, server_count: index.serverCount };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#http.close();
  }

  // ------------------------------------------------------------------ internals

  async #info(): Promise<RegistryInfo> {
    return this.#describe(await this.#index());
  }

  #describe(index: RegistryIndex): RegistryInfo {
    const source = this.#source();
    return {
      name: DEFAULT_REGISTRY,
      type: source.type,
      source: source.location,
      version: index.version,
      last_updated: index.lastUpdated,
      // Deliberate: counts every server; the reference counts container servers only.
      server_count: index.serverCount,
      auth_status: 'none',
      auth_type: '',
    };
  }

  #source(): RegistrySource {
    const config = this.sourceConfig();
    const key = config === undefined ? 'builtin' : JSON.stringify(config);
    if (this.#current?.key !== key)
      this.#current = { key, source: config === undefined ? new BuiltinSource() : this.#build(config) };
    return this.#current.source;
  }

  #build(config: StoredSourceConfig): RegistrySource {
    if (config.type === 'file') return new FileSource(config.location);
    const options = {
      http: this.#http,
      allowPrivate: config.allow_private_ip,
      timeoutMs: this.#timeoutMs,
      ttlMs: this.#ttlMs,
      cacheDir: this.#cacheDir,
      now: this.#now,
    };
    return config.type === 'api'
      ? new ApiSource(config.location, options)
      : new UrlSource(config.location, options);
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
      throw toReadError(err, source);
    }
  }

  /**
   * A `url` that does not end in `.json` may be the base URL of a registry API: probe
   * `GET <url>/v0.1/servers?limit=1` and call it `api` when it answers like one
   * (reference §1.2: 2xx with a `servers` array and a `metadata` object, or 401/403).
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

function requireDefault(name: string): void {
  if (name !== DEFAULT_REGISTRY) {
    throw new SkepError(
      'registry_not_found',
      `registry ${name} does not exist; the only registry is "default"`,
    );
  }
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

/** Errors while setting a source (reference §1.2 error mapping). */
function toConfigureError(err: unknown, input: string): SkepError {
  if (err instanceof SkepError) return err;
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
