/**
 * Where the default registry's content comes from (ToolHive's sources): the built-in catalog, a
 * local file (re-read when its mtime or size changes), a static JSON URL (cached on disk with its
 * ETag and a TTL; revalidated with If-None-Match), or an upstream MCP registry v0.1 API (paged
 * fetch, cached with a TTL). A URL or API source that is down is served from its last good copy
 * with a warning; with no copy at all the load fails.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../shared/index.js';
import { builtinDocument } from './catalog/index.js';
import {
  checkGroups,
  InvalidRegistryError,
  parseJson,
  toCatalogServer,
  toCatalogSkill,
  toRegistryDocument,
  toRegistryGroup,
} from './document.js';
import { type HttpResponse, type RegistryHttp, SourceFetchError } from './fetch.js';
import type {
  CatalogServer,
  CatalogSkill,
  RegistryDocument,
  RegistryGroup,
  SourceType,
} from '../schemas/registry/index.js';
import { RegistryIndex } from './search.js';

export interface LoadResult {
  index: RegistryIndex;
  /** Set when the content is a stale copy because the source could not be read. */
  warning?: string;
}

export interface LoadOptions {
  /** Ignore the TTL and go to the source now. */
  force?: boolean;
  /** When the source fails, fail instead of serving the last good copy. */
  noStale?: boolean;
}

/** One registry source. `location` is the URL or absolute path (`''` for the built-in). */
export interface RegistrySource {
  readonly type: SourceType;
  readonly location: string;
  load(options?: LoadOptions): Promise<LoadResult>;
  /** Drops every copy of the content (memory and disk): after a login or logout. */
  forget(): void;
}

/**
 * A 401 or 403 from a URL or API source: the registry wants (other) credentials. Never
 * answered from a stale copy (ToolHive serves a stale copy "except on auth errors").
 */
export function isAuthFailure(err: unknown): err is SourceFetchError {
  return (
    err instanceof SourceFetchError && err.kind === 'status' && (err.status === 401 || err.status === 403)
  );
}

let builtinIndex: RegistryIndex | undefined;

export class BuiltinSource implements RegistrySource {
  readonly type = 'default' as const;
  readonly location = '';
  async load(): Promise<LoadResult> {
    // Validated like any other source, so a broken built-in entry fails tests, not users.
    builtinIndex ??= new RegistryIndex(toRegistryDocument(builtinDocument(), 'the built-in catalog'));
    return { index: builtinIndex };
  }

  forget(): void {
    // nothing fetched, nothing to drop
  }
}

/** Loads a registry file synchronously (benchmarks and the file source share this). */
export function readRegistryFile(path: string): RegistryIndex {
  return new RegistryIndex(toRegistryDocument(parseJson(readFileSync(path, 'utf8'), path), path));
}

export class FileSource implements RegistrySource {
  readonly type = 'file' as const;
  #cached: { key: string; index: RegistryIndex } | undefined;

  /** `allowEmpty`: a document with no entries is served, not refused. */
  constructor(
    readonly location: string,
    readonly allowEmpty = false,
  ) {}

  async load(options: LoadOptions = {}): Promise<LoadResult> {
    let key: string;
    try {
      const st = statSync(this.location);
      key = `${st.ino}:${st.size}:${st.mtimeMs}`;
      if (options.force !== true && this.#cached?.key === key) return { index: this.#cached.index };
      const text = await readFile(this.location, 'utf8');
      const index = new RegistryIndex(
        toRegistryDocument(parseJson(text, this.location), this.location, { allowEmpty: this.allowEmpty }),
      );
      this.#cached = { key, index };
      return { index };
    } catch (err) {
      if (this.#cached === undefined || options.noStale === true) throw err;
      return {
        index: this.#cached.index,
        warning: `serving the last good copy of ${this.location}: ${(err as Error).message}`,
      };
    }
  }

  forget(): void {
    this.#cached = undefined;
  }
}

export interface RemoteSourceOptions {
  http: RegistryHttp;
  allowPrivate: boolean;
  timeoutMs: number;
  ttlMs: number;
  /** Folder for the on-disk copy (shared by `skep serve` and CLI commands). */
  cacheDir: string;
  now: () => number;
  /**
   * The `Authorization` value for the source's requests (registry authentication), or
   * `undefined` to send none (no login yet: the registry's 401 then says one is needed).
   */
  authorization?: () => Promise<string | undefined>;
}

interface CacheFile {
  location: string;
  etag?: string;
  fetched_at: number;
  document: RegistryDocument;
}

/** After a failed fetch, serve the stale copy for this long before trying again. */
const RETRY_AFTER_FAILURE_MS = 30_000;

/** The shared TTL / disk-cache / stale-on-failure logic of the URL and API sources. */
abstract class CachedRemoteSource implements RegistrySource {
  abstract readonly type: SourceType;
  #state: { index: RegistryIndex; etag: string | undefined; fetchedAt: number } | undefined;
  #diskChecked = false;
  #failedAt = 0;
  #lastError = '';
  #inflight: Promise<LoadResult> | undefined;

  constructor(
    readonly location: string,
    protected readonly options: RemoteSourceOptions,
  ) {}

  get #cacheFile(): string {
    const hash = createHash('sha256').update(`${this.type}:${this.location}`).digest('hex').slice(0, 16);
    return join(this.options.cacheDir, 'registry', `${this.type}-${hash}.json`);
  }

  /** Fetches the whole content; `etag` is the validator of the cached copy (URL source only). */
  protected abstract fetchDocument(
    etag: string | undefined,
  ): Promise<{ document: RegistryDocument; etag?: string } | 'not-modified'>;

  load(options: LoadOptions = {}): Promise<LoadResult> {
    if (options.force !== true && this.#inflight !== undefined) return this.#inflight;
    const run = this.#doLoad(options).finally(() => {
      if (this.#inflight === run) this.#inflight = undefined;
    });
    this.#inflight = run;
    return run;
  }

  #readDisk(): void {
    if (this.#diskChecked) return;
    this.#diskChecked = true;
    try {
      const file = JSON.parse(readFileSync(this.#cacheFile, 'utf8')) as CacheFile;
      if (file.location !== this.location) return;
      const index = new RegistryIndex(toRegistryDocument(file.document, this.#cacheFile));
      this.#state = { index, etag: file.etag, fetchedAt: file.fetched_at };
    } catch {
      // no copy, or a corrupt one: fetch afresh
    }
  }

  #writeDisk(document: RegistryDocument, etag: string | undefined, fetchedAt: number): void {
    const file: CacheFile = {
      location: this.location,
      fetched_at: fetchedAt,
      document,
      ...(etag !== undefined ? { etag } : {}),
    };
    try {
      mkdirSync(join(this.options.cacheDir, 'registry'), { recursive: true, mode: 0o700 });
      writeFileAtomicSync(this.#cacheFile, JSON.stringify(file));
    } catch {
      // the cache is an optimisation; a read-only cache dir must not break the registry
    }
  }

  async #doLoad(options: LoadOptions): Promise<LoadResult> {
    this.#readDisk();
    const now = this.options.now();
    const state = this.#state;
    if (state !== undefined && options.force !== true) {
      if (now - state.fetchedAt < this.options.ttlMs) return { index: state.index };
      if (options.noStale !== true && now - this.#failedAt < RETRY_AFTER_FAILURE_MS) {
        return { index: state.index, warning: this.#staleWarning(state.fetchedAt) };
      }
    }
    try {
      const result = await this.fetchDocument(state?.etag);
      const fetchedAt = this.options.now();
      if (result === 'not-modified' && state !== undefined) {
        this.#state = { ...state, fetchedAt };
        this.#touchDisk(fetchedAt);
        return { index: state.index };
      }
      if (result === 'not-modified')
        throw new InvalidRegistryError(`${this.location} answered 304 to a request without a validator`);
      const index = new RegistryIndex(result.document);
      this.#state = { index, etag: result.etag, fetchedAt };
      this.#writeDisk(result.document, result.etag, fetchedAt);
      this.#failedAt = 0;
      return { index };
    } catch (err) {
      this.#failedAt = this.options.now();
      this.#lastError = (err as Error).message;
      if (isAuthFailure(err)) {
        // The registry wants (other) credentials now: what it served before is not kept either.
        this.forget();
        throw err;
      }
      if (state === undefined || options.noStale === true) throw err;
      return { index: state.index, warning: this.#staleWarning(state.fetchedAt) };
    }
  }

  forget(): void {
    this.#state = undefined;
    this.#diskChecked = true;
    this.#failedAt = 0;
    rmSync(this.#cacheFile, { force: true });
  }

  #touchDisk(fetchedAt: number): void {
    try {
      const file = JSON.parse(readFileSync(this.#cacheFile, 'utf8')) as CacheFile;
      file.fetched_at = fetchedAt;
      writeFileAtomicSync(this.#cacheFile, JSON.stringify(file));
    } catch {
      // see writeDisk
    }
  }

  #staleWarning(fetchedAt: number): string {
    return `registry source ${this.location} is unavailable (${this.#lastError}); serving the copy fetched at ${new Date(fetchedAt).toISOString()}`;
  }

  protected async get(url: string, headers: Record<string, string> = {}): Promise<HttpResponse> {
    const authorization = await this.options.authorization?.();
    return this.options.http.fetch(url, {
      allowPrivate: this.options.allowPrivate,
      timeoutMs: this.options.timeoutMs,
      headers: authorization === undefined ? headers : Object.assign({ authorization }, headers),
    });
  }
}

function statusError(url: string, res: HttpResponse): SourceFetchError {
  const auth = res.status === 401 || res.status === 403 ? ' (the registry requires authentication)' : '';
  return new SourceFetchError('status', `${url} answered HTTP ${res.status}${auth}`, res.status);
}

/** A static registry document at an http(s) URL. */
export class UrlSource extends CachedRemoteSource {
  readonly type = 'url' as const;

  protected async fetchDocument(etag: string | undefined) {
    const res = await this.get(this.location, etag !== undefined ? { 'if-none-match': etag } : {});
    if (res.status === 304) return 'not-modified' as const;
    if (res.status !== 200) throw statusError(this.location, res);
    const document = toRegistryDocument(parseJson(res.text, this.location), this.location);
    const tag = res.headers['etag'];
    return { document, ...(typeof tag === 'string' ? { etag: tag } : {}) };
  }
}

/** Skep's extension of the v0.1 API: the registry's groups (`{groups: [{name, description, servers}]}`). */
export const GROUPS_PATH = '/v0.1/x/dev.skep/groups';

/** Items per request to an upstream API; Skep and ToolHive clamp to 200, the official registry to 100. */
const API_PAGE_SIZE = 100;
/** Stop paging after this many items (ToolHive stops at 10 000). */
const API_MAX_ITEMS = 20_000;

/** An upstream MCP registry v0.1 API (the official registry, ToolHive, or another Skep). */
export class ApiSource extends CachedRemoteSource {
  readonly type = 'api' as const;

  #endpoint(path: string): string {
    return `${this.location.replace(/\/+$/, '')}${path}`;
  }

  protected async fetchDocument() {
    const servers = await this.#fetchAll(this.#endpoint('/v0.1/servers'), 'servers', toCatalogServer, true);
    const skills = await this.#fetchAll(
      this.#endpoint('/v0.1/x/dev.toolhive/skills'),
      'skills',
      toCatalogSkill,
      false,
    );
    const groups = await this.#fetchGroups(servers);
    const document: RegistryDocument = {
      version: '1.0.0',
      meta: { last_updated: new Date(this.options.now()).toISOString() },
      data: groups.length === 0 ? { servers, skills } : { servers, skills, groups },
    };
    return { document };
  }

  /**
   * Skep's extension endpoint `x/dev.skep/groups` (another Skep serves it; other registries
   * answer 404, which means no groups). Validated like `data.groups` of a file.
   */
  async #fetchGroups(servers: readonly CatalogServer[]): Promise<RegistryGroup[]> {
    const url = this.#endpoint(GROUPS_PATH);
    const res = await this.get(url);
    if (res.status === 404 || res.status === 405) return [];
    if (res.status !== 200) throw statusError(url, res);
    const body = parseJson(res.text, url) as { groups?: unknown };
    const items = typeof body === 'object' && body !== null ? body.groups : undefined;
    if (!Array.isArray(items))
      throw new InvalidRegistryError(`${url} is not a groups answer (no groups array)`);
    const groups = items.map((item: unknown, i: number) => toRegistryGroup(item, `${url} groups[${i}]`));
    checkGroups(groups, servers, url);
    return groups;
  }

  /**
   * Pages through a list endpoint. Two paging styles exist: the official registry's cursor
   * (`metadata.nextCursor`) and the page/limit style of ToolHive's and Skep's own catalog
   * (`metadata.total/page/limit`). Items may be bare or wrapped as `{server, _meta}`.
   */
  async #fetchAll<T>(
    base: string,
    key: 'servers' | 'skills',
    check: (value: unknown, where: string) => T,
    required: boolean,
  ): Promise<T[]> {
    const out: T[] = [];
    let query = `limit=${API_PAGE_SIZE}&page=1&version=latest`;
    for (;;) {
      const url = `${base}?${query}`;
      const res = await this.get(url);
      if (!required && (res.status === 404 || res.status === 405)) return out;
      if (res.status !== 200) throw statusError(url, res);
      const body = parseJson(res.text, url) as { metadata?: Record<string, unknown> } & Record<
        string,
        unknown
      >;
      const items = typeof body === 'object' && body !== null ? body[key] : undefined;
      if (!Array.isArray(items))
        throw new InvalidRegistryError(`${url} is not a registry API answer (no ${key} array)`);
      items.forEach((item: unknown, i: number) => {
        const inner =
          key === 'servers' && typeof item === 'object' && item !== null && 'server' in item
            ? item.server
            : item;
        out.push(check(inner, `${url} ${key}[${i}]`));
      });
      const meta = body.metadata ?? {};
      if (items.length === 0 || out.length >= API_MAX_ITEMS) return out;
      const cursor = meta['nextCursor'];
      if (typeof cursor === 'string' && cursor !== '') {
        query = `limit=${API_PAGE_SIZE}&cursor=${encodeURIComponent(cursor)}&version=latest`;
        continue;
      }
      const { total, page, limit } = meta as { total?: unknown; page?: unknown; limit?: unknown };
      if (
        typeof total === 'number' &&
        typeof page === 'number' &&
        typeof limit === 'number' &&
        page * limit < total
      ) {
        query = `limit=${API_PAGE_SIZE}&page=${page + 1}&version=latest`;
        continue;
      }
      return out;
    }
  }
}

export type { CatalogServer, CatalogSkill };
