/**
 * The MCPRegistry `configYAML` (the reference registry server's configuration: `sources[]`,
 * `registries[]`, `database`, `auth`, with per source `file`, `api`, `git`, `kubernetes`,
 * `syncPolicy`, `filter`) as Skep's registry server reads it: one registry (`default`) serving one
 * source, a file (a mounted ConfigMap, PVC…) or a registry API, read-only. What Skep cannot honour
 * is a problem naming it; what has no meaning without a database is listed as ignored.
 */
import { createHash } from 'node:crypto';
import { isRecord } from '../../shared/index.js';
import { canonicalJson } from './config-hash.js';

export const REGISTRY_CONFIG_DIR = '/config';
export const REGISTRY_PORT = 8080;

export const dataChecksumOf = (data: Record<string, string>) =>
  createHash('sha256').update(canonicalJson(data)).digest('hex');

/** `filter` of a file source: servers by name (globs with `*`) and by publisher-provided tags. */
export interface RegistryFilter {
  names?: { include?: string[]; exclude?: string[] };
  tags?: { include?: string[]; exclude?: string[] };
}

export interface RegistrySourceConfig {
  /** What `RegistryService.configure` takes. */
  update: { local_path?: string; api_url?: string; allow_private_ip?: boolean };
  /** `syncPolicy.interval` in ms (how long a fetched copy is served before it is fetched again). */
  ttlMs?: number;
  /** A file source's filter: the server serves a filtered copy of the file. */
  filter?: RegistryFilter;
}

const strings = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;

function parseFilter(value: unknown, at: string, problems: string[]): RegistryFilter | undefined {
  if (!isRecord(value)) {
    problems.push(`${at}: must be a mapping of names and tags`);
    return undefined;
  }
  const out: RegistryFilter = {};
  for (const [key, v] of Object.entries(value)) {
    if (key !== 'names' && key !== 'tags') {
      problems.push(`${at}.${key}: Skep's registry server filters by names and tags only`);
      continue;
    }
    if (!isRecord(v)) {
      problems.push(`${at}.${key}: must have include and/or exclude lists`);
      continue;
    }
    const part: { include?: string[]; exclude?: string[] } = {};
    for (const [k, list] of Object.entries(v)) {
      const items = strings(list);
      if ((k !== 'include' && k !== 'exclude') || items === undefined)
        problems.push(`${at}.${key}.${k}: only include and exclude lists of strings`);
      else part[k] = items;
    }
    out[key] = part;
  }
  return out;
}

/** Publisher-provided tags of an upstream-format server (`_meta…publisher-provided.<ns>.<id>.tags`). */
function tagsOf(server: Record<string, unknown>): string[] {
  const meta = isRecord(server['_meta']) ? server['_meta'] : {};
  const provided = meta['io.modelcontextprotocol.registry/publisher-provided'];
  const out: string[] = [];
  const walk = (v: unknown, depth: number) => {
    if (!isRecord(v) || depth > 3) return;
    const tags = strings(v['tags']);
    if (tags !== undefined) out.push(...tags);
    for (const child of Object.values(v)) walk(child, depth + 1);
  };
  walk(provided, 0);
  return out;
}

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

/** The registry document with only the servers the filter keeps (upstream format `data.servers`). */
export function filterRegistryDocument(doc: unknown, filter: RegistryFilter): unknown {
  if (!isRecord(doc) || !isRecord(doc['data']) || !Array.isArray(doc['data']['servers'])) return doc;
  const keep = (server: unknown): boolean => {
    if (!isRecord(server)) return false;
    const name = String(server['name'] ?? '');
    const tags = tagsOf(server);
    const n = filter.names;
    if (n?.include !== undefined && !n.include.some((p) => glob(p).test(name))) return false;
    if (n?.exclude?.some((p) => glob(p).test(name)) === true) return false;
    const t = filter.tags;
    if (t?.include !== undefined && !t.include.some((x) => tags.includes(x))) return false;
    if (t?.exclude?.some((x) => tags.includes(x)) === true) return false;
    return true;
  };
  return { ...doc, data: { ...doc['data'], servers: doc['data']['servers'].filter(keep) } };
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function durationMs(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const parts = [...text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((m) => m[0]).join('') !== text) return undefined;
  return parts.reduce((t, m) => t + Number(m[1]) * (UNITS[m[2] as string] ?? 0), 0);
}

export function registrySource(config: unknown): {
  source?: RegistrySourceConfig;
  problems: string[];
  ignored: string[];
} {
  const problems: string[] = [];
  const ignored: string[] = [];
  if (!isRecord(config)) return { problems: ['must be a YAML mapping'], ignored };
  const known = new Set(['sources', 'registries', 'database', 'auth']);
  for (const key of Object.keys(config))
    if (!known.has(key)) problems.push(`${key}: not a setting Skep's registry server knows`);
  if (config['database'] !== undefined)
    ignored.push(
      "database: not used: Skep's registry server keeps no database (it serves the source read-only)",
    );
  const auth = config['auth'];
  if (auth !== undefined && !(isRecord(auth) && (auth['mode'] === 'anonymous' || auth['mode'] === undefined)))
    problems.push(
      "auth.mode: Skep's registry server serves anonymously (read-only) only; put an authenticating proxy in front of its Service and set mode: anonymous",
    );
  const registries = Array.isArray(config['registries']) ? config['registries'] : [];
  const sources = Array.isArray(config['sources']) ? config['sources'] : [];
  if (registries.length !== 1) {
    problems.push(
      `registries: Skep's registry server serves exactly one registry (got ${registries.length})`,
    );
    return { problems, ignored };
  }
  const registry = registries[0];
  if (!isRecord(registry) || registry['name'] !== 'default')
    problems.push('registries[0].name: must be default (the one registry Skep serves)');
  const names = isRecord(registry) && Array.isArray(registry['sources']) ? registry['sources'] : [];
  if (names.length !== 1) {
    problems.push(`registries[0].sources: Skep serves one source per registry (got ${names.length})`);
    return { problems, ignored };
  }
  const i = sources.findIndex((s) => isRecord(s) && s['name'] === names[0]);
  const source = sources[i];
  if (!isRecord(source)) {
    problems.push(`registries[0].sources: no source is named ${String(names[0])}`);
    return { problems, ignored };
  }
  const at = `sources[${i}]`;
  const out: RegistrySourceConfig = { update: {} };
  const file = source['file'];
  const api = source['api'];
  if (isRecord(file) && typeof file['path'] === 'string') out.update = { local_path: file['path'] };
  else if (isRecord(api) && typeof api['endpoint'] === 'string')
    // An in-cluster registry API is on a private address by design.
    out.update = { api_url: api['endpoint'], allow_private_ip: true };
  else if (source['git'] !== undefined)
    problems.push(
      `${at}.git: Skep's registry server does not clone git repositories; mount the registry file (ConfigMap, PVC) and use file.path`,
    );
  else if (source['kubernetes'] !== undefined)
    problems.push(
      `${at}.kubernetes: Skep's registry server does not list cluster workloads as a registry; use file.path or api.endpoint`,
    );
  else problems.push(`${at}: needs file.path or api.endpoint`);
  if (source['filter'] !== undefined) {
    if (out.update.local_path === undefined)
      problems.push(`${at}.filter: Skep's registry server filters file sources only; remove filter`);
    else {
      const filter = parseFilter(source['filter'], `${at}.filter`, problems);
      if (filter !== undefined) out.filter = filter;
    }
  }
  const interval = isRecord(source['syncPolicy']) ? source['syncPolicy']['interval'] : undefined;
  if (interval !== undefined) {
    const ms = durationMs(interval);
    if (ms === undefined || ms <= 0)
      problems.push(`${at}.syncPolicy.interval: must be a duration such as 30m`);
    else out.ttlMs = ms;
  }
  return problems.length > 0 ? { problems, ignored } : { source: out, problems, ignored };
}
