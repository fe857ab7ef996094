/**
 * The MCPRegistry `configYAML` (the reference registry server's configuration: `sources[]`,
 * `registries[]`, `database`, `auth`, with per source `file`, `api`, `git`, `kubernetes`,
 * `syncPolicy`, `filter`) as Skep's registry server reads it: every registry of `registries[]`,
 * each serving the union of the sources it names (files such as a mounted ConfigMap, registry
 * APIs, git repositories, the cluster's MCPServer-like objects), read-only, anonymously or behind
 * OAuth bearer tokens. What Skep cannot honour is a problem naming it; what has no meaning without
 * a database is listed as ignored.
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

/** Where a git source is read: one branch, tag or commit. */
export type GitRef = { branch: string } | { tag: string } | { commit: string };

/** One entry of `sources[]`, as Skep's registry server reads it. */
export type RegistrySourceSpec = { name: string; ttlMs?: number; filter?: RegistryFilter } & (
  | { kind: 'file'; path: string }
  /** `file.url`: a registry file fetched over HTTP(S) (https unless the host is loopback). */
  | { kind: 'url'; url: string; timeoutMs: number }
  /** `file.data`: the registry document written inline. */
  | { kind: 'data'; doc: unknown }
  | { kind: 'api'; endpoint: string }
  | {
      kind: 'git';
      repository: string;
      ref: GitRef;
      /** The registry file inside the repository. */
      path: string;
      auth?: { username: string; passwordFile: string };
    }
  | {
      kind: 'kubernetes';
      /** The namespaces listed; none → the pod's own namespace. */
      namespaces: string[];
    }
);

/** One entry of `registries[]`: served at `/registry/{name}/v0.1/…` as the union of its sources. */
export interface RegistryPlan {
  name: string;
  sources: RegistrySourceSpec[];
}

/** `auth.oauth.providers[]`: whose bearer JWTs the server accepts. */
export interface OAuthProviderSpec {
  name: string;
  issuerUrl: string;
  audience: string;
  jwksUrl?: string;
  caCertPath?: string;
  authTokenFile?: string;
  introspectionUrl?: string;
  clientId?: string;
  clientSecretFile?: string;
  allowPrivateIP?: boolean;
}

export type RegistryAuthSpec =
  | { mode: 'anonymous' }
  | {
      mode: 'oauth';
      resourceUrl?: string;
      realm: string;
      scopesSupported: string[];
      providers: OAuthProviderSpec[];
      publicPaths: string[];
    };

export interface RegistryServerConfig {
  registries: RegistryPlan[];
  auth: RegistryAuthSpec;
}

/** The reference's defaults of `auth.oauth.scopesSupported` and `realm`. */
const DEFAULT_SCOPES = ['mcp-registry:read', 'mcp-registry:write'];
const DEFAULT_REALM = 'mcp-registry';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** `git`: the repository, one ref (branch `main` when none is named), the file's path, basic auth. */
function parseGit(git: unknown, at: string, problems: string[]) {
  if (!isRecord(git) || str(git['repository']) === undefined) {
    problems.push(`${at}.git.repository: required (an https:// URL)`);
    return undefined;
  }
  const repository = git['repository'] as string;
  if (!/^https?:\/\//.test(repository))
    problems.push(
      `${at}.git.repository: Skep fetches git over http(s) only (no ssh: the image has no git binary)`,
    );
  const refs = (['branch', 'tag', 'commit'] as const).filter((k) => str(git[k]) !== undefined);
  if (refs.length > 1) problems.push(`${at}.git: set one of branch, tag and commit (got ${refs.join(', ')})`);
  const kind = refs[0];
  const ref: GitRef =
    kind === 'tag'
      ? { tag: git['tag'] as string }
      : kind === 'commit'
        ? { commit: git['commit'] as string }
        : { branch: str(git['branch']) ?? 'main' };
  if ('commit' in ref && !/^[0-9a-f]{40}$/i.test(ref.commit))
    problems.push(`${at}.git.commit: must be a full 40-hex commit id`);
  for (const key of Object.keys(git))
    if (!['repository', 'branch', 'tag', 'commit', 'path', 'auth'].includes(key))
      problems.push(`${at}.git.${key}: not a setting Skep's registry server knows`);
  const out = {
    kind: 'git' as const,
    repository,
    ref,
    path: str(git['path']) ?? 'registry.json',
  };
  const auth = git['auth'];
  if (auth === undefined) return out;
  if (!isRecord(auth) || str(auth['username']) === undefined || str(auth['passwordFile']) === undefined) {
    problems.push(`${at}.git.auth: needs username and passwordFile (a mounted Secret's file)`);
    return out;
  }
  return {
    ...out,
    auth: { username: auth['username'] as string, passwordFile: auth['passwordFile'] as string },
  };
}

/**
 * The most a registry server takes in from one read of a `file.url` or `git` source (bytes): the
 * proxy's own message limit, well inside the pod's memory limit.
 */
export const MAX_REGISTRY_SOURCE_BYTES = 32 * 1024 * 1024;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** `file.timeout` when not given, as the reference's registry server. */
const URL_TIMEOUT_MS = 30_000;

/**
 * A `file` source: exactly one of `path` (a mounted file), `url` (fetched over HTTP(S): https
 * unless the host is loopback, as the reference's registry server requires, with `timeout`) and
 * `data` (the registry document inline, checked to be JSON here).
 */
function parseFileSource(
  name: string,
  file: Record<string, unknown>,
  at: string,
  problems: string[],
): RegistrySourceSpec | undefined {
  for (const key of Object.keys(file))
    if (!['path', 'url', 'data', 'timeout'].includes(key))
      problems.push(`${at}.${key}: not a setting of a file source (path, url, data, timeout)`);
  const given = (['path', 'url', 'data'] as const).filter((k) => file[k] !== undefined);
  if (given.length !== 1) {
    problems.push(`${at}: needs exactly one of path, url and data (got ${given.length})`);
    return undefined;
  }
  const value = str(file[given[0] as string]);
  if (value === undefined) {
    problems.push(`${at}.${String(given[0])}: must be a non-empty string`);
    return undefined;
  }
  if (file['timeout'] !== undefined && given[0] !== 'url')
    problems.push(`${at}.timeout: applies to file.url only`);
  switch (given[0]) {
    case 'path':
      return { name, kind: 'file', path: value };
    case 'data':
      try {
        return { name, kind: 'data', doc: JSON.parse(value) as unknown };
      } catch (err) {
        problems.push(`${at}.data: not JSON (${(err as Error).message})`);
        return undefined;
      }
    default: {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        problems.push(`${at}.url: not a URL`);
        return undefined;
      }
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
        problems.push(`${at}.url: must be https (http only to localhost)`);
        return undefined;
      }
      const timeout = file['timeout'];
      const timeoutMs = timeout === undefined ? URL_TIMEOUT_MS : durationMs(timeout);
      if (timeoutMs === undefined || timeoutMs <= 0) {
        problems.push(`${at}.timeout: must be a duration such as 30s`);
        return undefined;
      }
      return { name, kind: 'url', url: url.href, timeoutMs };
    }
  }
}

function parseSource(
  source: Record<string, unknown>,
  at: string,
  problems: string[],
): RegistrySourceSpec | undefined {
  const name = String(source['name']);
  const kinds = (['file', 'api', 'git', 'kubernetes', 'managed'] as const).filter(
    (k) => source[k] !== undefined,
  );
  if (kinds.length !== 1) {
    problems.push(`${at}: needs exactly one of file, api, git and kubernetes (got ${kinds.length})`);
    return undefined;
  }
  for (const key of Object.keys(source))
    if (!['name', 'format', 'syncPolicy', 'filter', ...kinds].includes(key))
      problems.push(`${at}.${key}: not a setting Skep's registry server knows`);
  let spec: RegistrySourceSpec | undefined;
  const file = source['file'];
  const api = source['api'];
  switch (kinds[0]) {
    case 'file':
      spec = isRecord(file)
        ? parseFileSource(name, file, `${at}.file`, problems)
        : (problems.push(`${at}.file: must be a mapping with one of path, url and data`), undefined);
      break;
    case 'api':
      if (isRecord(api) && str(api['endpoint']) !== undefined)
        spec = { name, kind: 'api', endpoint: api['endpoint'] as string };
      else problems.push(`${at}.api.endpoint: required`);
      break;
    case 'git': {
      const git = parseGit(source['git'], at, problems);
      if (git !== undefined) spec = { name, ...git };
      break;
    }
    case 'kubernetes': {
      const k = source['kubernetes'];
      const namespaces = isRecord(k) && k['namespaces'] !== undefined ? strings(k['namespaces']) : [];
      if (namespaces === undefined || (isRecord(k) && Object.keys(k).some((x) => x !== 'namespaces')))
        problems.push(`${at}.kubernetes: takes only namespaces (a list of names)`);
      else spec = { name, kind: 'kubernetes', namespaces };
      break;
    }
    default:
      problems.push(
        `${at}.managed: Skep's registry server is read-only; a managed registry (written through the API) needs the reference's server`,
      );
  }
  if (spec === undefined) return undefined;
  if (source['filter'] !== undefined) {
    if (spec.kind === 'kubernetes')
      problems.push(
        `${at}.filter: a kubernetes source serves the objects that opt in by annotation; remove filter`,
      );
    else {
      const filter = parseFilter(source['filter'], `${at}.filter`, problems);
      if (filter !== undefined) spec.filter = filter;
    }
  }
  const interval = isRecord(source['syncPolicy']) ? source['syncPolicy']['interval'] : undefined;
  if (interval !== undefined) {
    const ms = durationMs(interval);
    if (ms === undefined || ms <= 0)
      problems.push(`${at}.syncPolicy.interval: must be a duration such as 30m`);
    else spec.ttlMs = ms;
  }
  return spec;
}

function parseAuth(auth: unknown, problems: string[], ignored: string[]): RegistryAuthSpec {
  // Deliberate: without an `auth` section Skep serves anonymously (the reference defaults to oauth
  // and then requires auth.oauth); the read-only server is reachable only inside the cluster.
  if (auth === undefined) return { mode: 'anonymous' };
  if (!isRecord(auth)) {
    problems.push('auth: must be a mapping');
    return { mode: 'anonymous' };
  }
  for (const key of Object.keys(auth))
    if (!['mode', 'oauth', 'publicPaths'].includes(key))
      problems.push(`auth.${key}: not a setting Skep's registry server knows`);
  const mode = auth['mode'] ?? 'oauth';
  if (mode === 'anonymous') return { mode: 'anonymous' };
  if (mode !== 'oauth') {
    problems.push(`auth.mode: must be anonymous or oauth (got ${String(mode)})`);
    return { mode: 'anonymous' };
  }
  const oauth = auth['oauth'];
  if (!isRecord(oauth)) {
    problems.push('auth.oauth: required when mode is oauth');
    return { mode: 'anonymous' };
  }
  for (const key of Object.keys(oauth))
    if (!['resourceUrl', 'realm', 'scopesSupported', 'providers'].includes(key))
      problems.push(`auth.oauth.${key}: not a setting Skep's registry server knows`);
  const providers: OAuthProviderSpec[] = [];
  const list = Array.isArray(oauth['providers']) ? oauth['providers'] : [];
  if (list.length === 0) problems.push('auth.oauth.providers: at least one provider is required');
  for (const [i, p] of list.entries()) {
    const at = `auth.oauth.providers[${i}]`;
    if (!isRecord(p)) {
      problems.push(`${at}: must be a mapping`);
      continue;
    }
    const known = [
      'name',
      'issuerUrl',
      'audience',
      'jwksUrl',
      'caCertPath',
      'authTokenFile',
      'introspectionUrl',
      'clientId',
      'clientSecretFile',
      'allowPrivateIP',
    ];
    for (const key of Object.keys(p))
      if (!known.includes(key)) problems.push(`${at}.${key}: not a setting Skep's registry server knows`);
    const name = str(p['name']);
    const issuerUrl = str(p['issuerUrl']);
    const audience = str(p['audience']);
    if (name === undefined) problems.push(`${at}.name: required`);
    if (issuerUrl === undefined || !/^https?:\/\/[^/]/.test(issuerUrl))
      problems.push(`${at}.issuerUrl: required (an absolute URL)`);
    // RFC 9068 §4 / RFC 7519 §4.1.3: a token is accepted only for this resource's audience.
    if (audience === undefined) problems.push(`${at}.audience: required`);
    if (p['allowPrivateIP'] !== undefined && typeof p['allowPrivateIP'] !== 'boolean')
      problems.push(`${at}.allowPrivateIP: must be true or false`);
    if (name === undefined || issuerUrl === undefined || audience === undefined) continue;
    const provider: OAuthProviderSpec = { name, issuerUrl, audience };
    for (const key of [
      'jwksUrl',
      'caCertPath',
      'authTokenFile',
      'introspectionUrl',
      'clientId',
      'clientSecretFile',
    ] as const) {
      const v = str(p[key]);
      if (v !== undefined) provider[key] = v;
    }
    if (p['allowPrivateIP'] === true) provider.allowPrivateIP = true;
    // RFC 7662: the client credentials authenticate introspection calls, the only use they have.
    if (provider.introspectionUrl === undefined)
      for (const key of ['clientId', 'clientSecretFile'] as const)
        if (provider[key] !== undefined)
          ignored.push(
            `${at}.${key}: not used without introspectionUrl (bearer tokens are checked as JWTs against the issuer's keys)`,
          );
    providers.push(provider);
  }
  const resourceUrl = str(oauth['resourceUrl']);
  if (resourceUrl !== undefined && !/^https?:\/\/[^/]/.test(resourceUrl))
    problems.push('auth.oauth.resourceUrl: must be an absolute URL');
  const scopes = oauth['scopesSupported'] === undefined ? DEFAULT_SCOPES : strings(oauth['scopesSupported']);
  if (scopes === undefined) problems.push('auth.oauth.scopesSupported: must be a list of strings');
  const publicPaths = auth['publicPaths'] === undefined ? [] : strings(auth['publicPaths']);
  if (publicPaths === undefined) problems.push('auth.publicPaths: must be a list of paths');
  return {
    mode: 'oauth',
    ...(resourceUrl === undefined ? {} : { resourceUrl }),
    realm: str(oauth['realm']) ?? DEFAULT_REALM,
    scopesSupported: scopes ?? DEFAULT_SCOPES,
    providers,
    publicPaths: publicPaths ?? [],
  };
}

/**
 * Reads `configYAML`: every `registries[]` entry with the sources it names (looked up in
 * `sources[]`), and `auth`. Problems name the setting; `ignored` lists what has no meaning for a
 * server without a database.
 */
export function parseRegistryServerConfig(config: unknown): {
  config?: RegistryServerConfig;
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
      "database: not used: Skep's registry server keeps no database (it serves the sources read-only)",
    );
  const auth = parseAuth(config['auth'], problems, ignored);
  const registries = Array.isArray(config['registries']) ? config['registries'] : [];
  const sources = Array.isArray(config['sources']) ? config['sources'] : [];
  if (registries.length === 0) problems.push('registries: at least one registry is required');
  const parsed = new Map<string, RegistrySourceSpec | undefined>();
  const sourceNamed = (name: unknown): RegistrySourceSpec | undefined => {
    const key = String(name);
    if (parsed.has(key)) return parsed.get(key);
    const i = sources.findIndex((s) => isRecord(s) && s['name'] === name);
    const source = sources[i];
    const spec = isRecord(source) ? parseSource(source, `sources[${i}]`, problems) : undefined;
    parsed.set(key, spec);
    return spec;
  };
  const plans: RegistryPlan[] = [];
  const seen = new Set<string>();
  for (const [r, registry] of registries.entries()) {
    const at = `registries[${r}]`;
    const name = isRecord(registry) ? str(registry['name']) : undefined;
    if (name === undefined || !/^[A-Za-z0-9._-]+$/.test(name)) {
      problems.push(`${at}.name: required (letters, digits, '.', '_' and '-': it is a URL segment)`);
      continue;
    }
    if (seen.has(name)) problems.push(`${at}.name: ${name} is used twice`);
    seen.add(name);
    const names = isRecord(registry) && Array.isArray(registry['sources']) ? registry['sources'] : [];
    if (names.length === 0) problems.push(`${at}.sources: at least one source is required`);
    const specs: RegistrySourceSpec[] = [];
    for (const n of names) {
      if (!sources.some((s) => isRecord(s) && s['name'] === n)) {
        problems.push(`${at}.sources: no source is named ${String(n)}`);
        continue;
      }
      const spec = sourceNamed(n);
      if (spec !== undefined) specs.push(spec);
    }
    plans.push({ name, sources: specs });
  }
  return problems.length > 0
    ? { problems, ignored }
    : { config: { registries: plans, auth }, problems, ignored };
}

/** The namespaces a kubernetes source of this configuration lists (`''` = the pod's own). */
export function kubernetesNamespaces(config: RegistryServerConfig): Set<string> | undefined {
  const out = new Set<string>();
  let any = false;
  for (const plan of config.registries)
    for (const s of plan.sources)
      if (s.kind === 'kubernetes') {
        any = true;
        if (s.namespaces.length === 0) out.add('');
        for (const ns of s.namespaces) out.add(ns);
      }
  return any ? out : undefined;
}
