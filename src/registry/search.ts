/**
 * The in-memory index of one loaded registry: servers and skills sorted by name (so pages
 * never overlap), lower-cased search fields, exact and short-name lookup, and the native
 * views computed once per entry. Built once per load; read-only afterwards.
 */
import { SkepError } from '../shared/index.js';
import type {
  CatalogServer,
  CatalogSkill,
  FoundServer,
  ImageServer,
  NativeGroup,
  NativeRegistry,
  RegistryDocument,
  RegistryGroup,
  RemoteServer,
} from '../schemas/registry/index.js';
import { hasRunnable, isRemote, toImageServer, toRemoteServer } from './native-view.js';

/** ToolHive's limits: `limit` default 50, maximum 200; `page` 1-based, default 1. */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export interface Paging {
  page: number;
  limit: number;
}

export interface Page<T> {
  items: T[];
  metadata: { total: number; page: number; limit: number };
}

function positiveInt(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : Number.NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/**
 * As in ToolHive's v0.1 catalog API, a missing, non-integer or non-positive `page`/`limit` takes
 * its default; `limit` above 200 is clamped; `page` is capped so that the offset stays a safe
 * integer.
 */
export function normalizePaging(
  page: string | number | undefined,
  limit: string | number | undefined,
): Paging {
  const l = Math.min(positiveInt(limit) ?? DEFAULT_LIMIT, MAX_LIMIT);
  const p = Math.min(positiveInt(page) ?? 1, Math.floor(Number.MAX_SAFE_INTEGER / l));
  return { page: p, limit: l };
}

function slicePage<T>(all: readonly T[], paging: Paging): Page<T> {
  const start = (paging.page - 1) * paging.limit;
  return { items: all.slice(start, start + paging.limit), metadata: { total: all.length, ...paging } };
}

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

interface ServerEntry {
  server: CatalogServer;
  /** Lower-cased name and description joined by NUL (which no query contains): one scan per entry. */
  haystack: string;
}

interface SkillEntry {
  skill: CatalogSkill;
  name: string;
  namespace: string;
  description: string;
}

const QUERY_CACHE_SIZE = 32;

export class RegistryIndex {
  readonly version: string;
  readonly lastUpdated: string;
  /** Entries with the same name after the first are ignored; this counts them. */
  readonly duplicates: number;
  readonly #servers: ServerEntry[];
  readonly #skills: SkillEntry[];
  readonly #groups: readonly RegistryGroup[];
  readonly #byName = new Map<string, CatalogServer>();
  readonly #byShortName = new Map<string, string[]>();
  readonly #queryCache = new Map<string, readonly CatalogServer[]>();
  #native: NativeRegistry | undefined;

  constructor(doc: RegistryDocument) {
    this.version = doc.version;
    this.lastUpdated = doc.meta?.last_updated ?? '';
    let duplicates = 0;
    const sorted = [...doc.data.servers].sort((a, b) => byCodeUnits(a.name, b.name));
    this.#servers = [];
    for (const server of sorted) {
      if (this.#byName.has(server.name)) {
        duplicates++;
        continue;
      }
      this.#byName.set(server.name, server);
      const short = server.name.slice(server.name.indexOf('/') + 1);
      const list = this.#byShortName.get(short);
      if (list === undefined) this.#byShortName.set(short, [server.name]);
      else list.push(server.name);
      this.#servers.push({ server, haystack: `${server.name}\u0000${server.description}`.toLowerCase() });
    }
    const skills = [...(doc.data.skills ?? [])].sort(
      (a, b) => byCodeUnits(a.name, b.name) || byCodeUnits(a.namespace, b.namespace),
    );
    this.#skills = [];
    const seenSkills = new Set<string>();
    for (const skill of skills) {
      const key = `${skill.namespace}/${skill.name}`;
      if (seenSkills.has(key)) {
        duplicates++;
        continue;
      }
      seenSkills.add(key);
      this.#skills.push({
        skill,
        name: skill.name.toLowerCase(),
        namespace: skill.namespace.toLowerCase(),
        description: skill.description.toLowerCase(),
      });
    }
    this.duplicates = duplicates;
    this.#groups = doc.data.groups ?? [];
  }

  get serverCount(): number {
    return this.#servers.length;
  }

  get skillCount(): number {
    return this.#skills.length;
  }

  /** The groups as the document defines them (members by full name), in document order. */
  get groups(): readonly RegistryGroup[] {
    return this.#groups;
  }

  /** All servers matching `q` (case-insensitive substring of name or description), by name. */
  filterServers(q: string | undefined): readonly CatalogServer[] {
    const needle = (q ?? '').replaceAll('\u0000', '').trim().toLowerCase();
    if (needle === '') return this.#servers.map((e) => e.server);
    const cached = this.#queryCache.get(needle);
    if (cached !== undefined) return cached;
    const out: CatalogServer[] = [];
    for (const e of this.#servers) {
      if (e.haystack.includes(needle)) out.push(e.server);
    }
    if (this.#queryCache.size >= QUERY_CACHE_SIZE) {
      const oldest = this.#queryCache.keys().next().value;
      if (oldest !== undefined) this.#queryCache.delete(oldest);
    }
    this.#queryCache.set(needle, out);
    return out;
  }

  listServers(q: string | undefined, paging: Paging): Page<CatalogServer> {
    return slicePage(this.filterServers(q), paging);
  }

  /** Skills matching `q` on name, namespace or description, by name then namespace. */
  listSkills(q: string | undefined, paging: Paging): Page<CatalogSkill> {
    const needle = (q ?? '').trim().toLowerCase();
    const all =
      needle === ''
        ? this.#skills
        : this.#skills.filter(
            (e) => e.name.includes(needle) || e.namespace.includes(needle) || e.description.includes(needle),
          );
    return slicePage(
      all.map((e) => e.skill),
      paging,
    );
  }

  getSkill(namespace: string, name: string): CatalogSkill {
    const found = this.#skills.find((e) => e.skill.namespace === namespace && e.skill.name === name);
    if (found === undefined)
      throw new SkepError('skill_not_found', `skill ${namespace}/${name} is not in the registry`);
    return found.skill;
  }

  /**
   * As ToolHive resolves a server name: the exact name first; a name without `/` may be a unique
   * short name (the part after the slash). Several matches → an error listing them.
   */
  /** Every server's full name. */
  serverNames(): string[] {
    return [...this.#byName.keys()];
  }

  getServer(name: string): CatalogServer {
    const exact = this.#byName.get(name);
    if (exact !== undefined) return exact;
    if (!name.includes('/')) {
      const matches = this.#byShortName.get(name) ?? [];
      if (matches.length === 1) return this.#byName.get(matches[0]!)!;
      if (matches.length > 1) {
        throw new SkepError(
          'server_name_ambiguous',
          `several servers are named ${name}: ${matches.join(', ')}; use the full name`,
        );
      }
    }
    throw new SkepError('server_not_found', `server ${name} is not in the registry`);
  }

  /** The server with its native data, for `skep run <name>` and the native get endpoint. */
  findServer(name: string): FoundServer {
    const catalog = this.getServer(name);
    const native = this.nativeRegistry();
    const remote = native.remote_servers[catalog.name];
    if (remote !== undefined) return { name: catalog.name, is_remote: true, remote_server: remote, catalog };
    const image = native.servers[catalog.name];
    if (image !== undefined) return { name: catalog.name, is_remote: false, server: image, catalog };
    throw new SkepError('server_not_found', `server ${catalog.name} has neither a package nor a remote`);
  }

  /** The native registry content; computed on first use and kept (the index is immutable). */
  nativeRegistry(): NativeRegistry {
    if (this.#native !== undefined) return this.#native;
    const servers: Record<string, ImageServer> = {};
    const remoteServers: Record<string, RemoteServer> = {};
    for (const { server } of this.#servers) {
      if (!hasRunnable(server)) continue;
      if (isRemote(server)) remoteServers[server.name] = toRemoteServer(server);
      else servers[server.name] = toImageServer(server);
    }
    this.#native = {
      version: this.version,
      last_updated: this.lastUpdated,
      servers,
      remote_servers: remoteServers,
      groups: this.#groups.map((group) => nativeGroup(group, servers, remoteServers)),
    };
    return this.#native;
  }
}

/** A group with its members in the native shape, each in the map of its kind (ToolHive's). */
function nativeGroup(
  group: RegistryGroup,
  servers: Record<string, ImageServer>,
  remoteServers: Record<string, RemoteServer>,
): NativeGroup {
  const images: Record<string, ImageServer> = {};
  const remotes: Record<string, RemoteServer> = {};
  for (const name of group.servers) {
    const remote = remoteServers[name];
    if (remote !== undefined) remotes[name] = remote;
    const image = servers[name];
    if (image !== undefined) images[name] = image;
  }
  return { name: group.name, description: group.description, servers: images, remote_servers: remotes };
}
