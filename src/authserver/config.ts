/**
 * Resolves the run configuration's `embedded_auth_server_config` (its one schema is
 * `EmbeddedAuthServerConfigSchema` in `src/schemas`, shaped as ToolHive's field of
 * the same name) into the frozen object the server runs on: `resolveAuthServerConfig` parses
 * the input with that schema, then checks only what a schema cannot (cross-field rules, URLs,
 * duration bounds, key and secret sizes), reads every referenced secret (key files, HMAC
 * secret files, environment variables) and fills the defaults. Wrong configuration is a
 * `SkepError` (`invalid_config`) whose message names the field to fix; secret values never appear in it.
 */
import { readFileSync } from 'node:fs';
import type {
  EmbeddedAuthServerConfig,
  RedisConfig,
  RedisTlsConfig,
  TokenResponseMapping,
  UpstreamConfig,
  UserInfoConfig,
} from '../schemas/index.js';
import {
  FORBIDDEN_AUTHORIZATION_PARAMS,
  formatAjvError,
  validateEmbeddedAuthServerConfig,
} from '../schemas/validators/auth-server/index.js';
import { goDurationMs, isLoopbackUrl, SkepError } from '../shared/index.js';

/** Runtime defaults, with units (ToolHive's token lifespans and limits). */
export const AUTH_SERVER_DEFAULTS = {
  accessTokenLifespanSec: 3600,
  authCodeLifespanSec: 600,
  refreshTokenLifespanSec: 168 * 3600,
  /** How long a consent page, and then the upstream login it leads to, may take. */
  pendingAuthorizationSec: 600,
  /** How long an approval (per user and client) and the browser's "remembered" cookie last. */
  consentRememberSec: 30 * 24 * 3600,
  scopesSupported: ['openid', 'profile', 'email', 'offline_access'],
  oidcScopes: ['openid', 'offline_access'],
  redisDialTimeoutMs: 5000,
  redisReadTimeoutMs: 3000,
  redisWriteTimeoutMs: 3000,
  redisKeyPrefix: 'skep:auth:{default}:',
  minHmacSecretBytes: 32,
} as const;

/** Lifespan bounds (ToolHive's `embeddedAuthServer.tokenLifespans` on MCPExternalAuthConfig), in seconds. */
const LIFESPAN_BOUNDS = {
  access_token_lifespan: [60, 24 * 3600],
  auth_code_lifespan: [30, 600],
  refresh_token_lifespan: [3600, 30 * 24 * 3600],
} as const;

/** Authorization parameters the server sets itself; `additional_authorization_params` may not. */
export const RESERVED_AUTHORIZATION_PARAMS = FORBIDDEN_AUTHORIZATION_PARAMS;

export interface ResolvedUpstream {
  name: string;
  type: 'oidc' | 'oauth2';
  clientId: string | undefined;
  clientSecret: string | undefined;
  redirectUri: string;
  scopes: string[];
  additionalParams: Record<string, string>;
  allowHttp: boolean;
  oidc?: { issuerUrl: string; subjectClaim: string };
  oauth2?: { authorizationEndpoint: string; tokenEndpoint: string };
  tokenResponseMapping?: Required<TokenResponseMapping>;
  userInfo?: Required<Omit<UserInfoConfig, 'additional_headers' | 'field_mapping'>> & {
    additionalHeaders: Record<string, string>;
    subjectFields: string[];
    nameFields: string[];
    emailFields: string[];
  };
  dcr?: {
    discoveryUrl?: string;
    registrationEndpoint?: string;
    initialAccessToken?: string;
    softwareId?: string;
    softwareStatement?: string;
  };
}

export interface ResolvedRedis {
  mode: 'standalone' | 'cluster' | 'sentinel';
  addr?: { host: string; port: number };
  sentinel?: { masterName: string; addrs: { host: string; port: number }[]; db: number };
  username?: string;
  password?: string;
  keyPrefix: string;
  dialTimeoutMs: number;
  readTimeoutMs: number;
  writeTimeoutMs: number;
  tls?: { ca?: string; rejectUnauthorized: boolean };
  sentinelTls?: { ca?: string; rejectUnauthorized: boolean };
}

export interface ResolvedAuthServerConfig {
  issuer: string;
  authorizationEndpoint: string;
  /** PEM (or JWK JSON) texts; the first signs, the rest only verify. Empty ⇒ ephemeral. */
  signingKeys: { source: string; text: string }[];
  /** The first is current, the rest only verify. Empty ⇒ ephemeral. */
  hmacSecrets: Buffer[];
  accessTokenLifespanSec: number;
  authCodeLifespanSec: number;
  refreshTokenLifespanSec: number;
  scopesSupported: string[];
  allowedAudiences: string[];
  upstreams: ResolvedUpstream[];
  storage: { type: 'memory' } | { type: 'redis'; redis: ResolvedRedis };
}

function bad(message: string): SkepError {
  return new SkepError('invalid_config', `embedded_auth_server_config: ${message}`);
}

/** Parses a Go-style duration (`1h30m`, `500ms`) to ms; ToolHive's configuration writes durations so. */
export function parseDuration(value: string, field: string): number {
  const ms = goDurationMs(value);
  if (ms === undefined || ms < 0)
    throw bad(`${field} must be a duration such as "1h", "10m" or "30s" (got "${value}")`);
  return ms;
}

/** RFC 8414 §2: https (http only on a loopback host or when allowed), no query, fragment or trailing slash. */
function checkIssuerUrl(value: string, field: string, allowHttp: boolean): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(`${field} must be an absolute URL (got "${value}")`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && (isLoopbackUrl(url) || allowHttp))) {
    throw bad(`${field} must use https (http is allowed only for localhost)`);
  }
  if (url.search || url.hash || value.includes('?') || value.includes('#')) {
    throw bad(`${field} must not have a query or fragment`);
  }
  if (url.username || url.password) throw bad(`${field} must not carry user information`);
  if (value.endsWith('/')) throw bad(`${field} must not end with a slash`);
  return value;
}

function checkHttpUrl(value: string | undefined, field: string, allowHttp: boolean): string {
  if (value === undefined || value === '') throw bad(`${field} is required`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(`${field} must be an absolute URL (got "${value}")`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowHttp)) {
    throw bad(`${field} must use https (set insecure_allow_http for a plain-http provider)`);
  }
  return value;
}

function readSecretFile(path: string, field: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new SkepError('invalid_config', `embedded_auth_server_config: ${field}: cannot read "${path}"`, {
      cause: err,
    });
  }
}

function readSecretEnv(env: NodeJS.ProcessEnv, name: string, field: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw bad(`${field}: environment variable ${name} is not set`);
  }
  return value;
}

function secretFrom(
  env: NodeJS.ProcessEnv,
  file: string | undefined,
  envVar: string | undefined,
  field: string,
): string | undefined {
  if (file && envVar) throw bad(`${field}: set only one of ${field}_file and ${field}_env_var`);
  if (file) return readSecretFile(file, `${field}_file`).trim();
  if (envVar) return readSecretEnv(env, envVar, `${field}_env_var`);
  return undefined;
}

function hostPort(value: string, field: string): { host: string; port: number } {
  const m = /^(.+):(\d{1,5})$/.exec(value);
  if (!m) throw bad(`${field} must be host:port (got "${value}")`);
  const host = (m[1] as string).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(m[2]) };
}

function checkAdditionalParams(
  params: Record<string, string> | undefined,
  field: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(params ?? {})) {
    if ((RESERVED_AUTHORIZATION_PARAMS as readonly string[]).includes(name)) {
      throw bad(`${field}: "${name}" is set by the server and cannot be overridden`);
    }
    out[name] = String(value);
  }
  return out;
}

function resolveUserInfo(
  cfg: UserInfoConfig,
  field: string,
  allowHttp: boolean,
): NonNullable<ResolvedUpstream['userInfo']> {
  const method = (cfg.http_method ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'POST') throw bad(`${field}.http_method must be GET or POST`);
  const fm = cfg.field_mapping ?? {};
  return {
    endpoint_url: checkHttpUrl(cfg.endpoint_url, `${field}.endpoint_url`, allowHttp),
    http_method: method,
    additionalHeaders: { ...(cfg.additional_headers ?? {}) },
    subjectFields: fm.subject_fields?.length ? [...fm.subject_fields] : ['sub'],
    nameFields: fm.name_fields?.length ? [...fm.name_fields] : ['name'],
    emailFields: fm.email_fields?.length ? [...fm.email_fields] : ['email'],
  };
}

function resolveUpstream(
  up: UpstreamConfig,
  index: number,
  issuer: string,
  env: NodeJS.ProcessEnv,
  globalHttp: boolean,
): ResolvedUpstream {
  const field = `upstreams[${index}]`;
  const hasOidc = up.oidc_config !== undefined;
  const hasOauth2 = up.oauth2_config !== undefined;
  if (!((up.type === 'oidc' && hasOidc && !hasOauth2) || (up.type === 'oauth2' && hasOauth2 && !hasOidc))) {
    throw bad(
      `${field}: type must be "oidc" or "oauth2"; oidc_config must be set when type is "oidc" and oauth2_config when type is "oauth2" (and the other must not be set)`,
    );
  }
  const defaultRedirect = `${issuer}/oauth/callback`;
  if (up.type === 'oidc' && up.oidc_config) {
    const c = up.oidc_config;
    const allowHttp = globalHttp || c.insecure_allow_http === true;
    const resolved: ResolvedUpstream = {
      name: up.name,
      type: 'oidc',
      clientId: c.client_id,
      clientSecret: secretFrom(
        env,
        c.client_secret_file,
        c.client_secret_env_var,
        `${field}.oidc_config.client_secret`,
      ),
      redirectUri: c.redirect_uri || defaultRedirect,
      scopes: c.scopes?.length ? [...c.scopes] : [...AUTH_SERVER_DEFAULTS.oidcScopes],
      additionalParams: checkAdditionalParams(
        c.additional_authorization_params,
        `${field}.oidc_config.additional_authorization_params`,
      ),
      allowHttp,
      oidc: {
        issuerUrl: checkHttpUrl(c.issuer_url, `${field}.oidc_config.issuer_url`, allowHttp),
        subjectClaim: c.subject_claim || 'sub',
      },
    };
    if (c.userinfo_override) {
      resolved.userInfo = resolveUserInfo(
        c.userinfo_override,
        `${field}.oidc_config.userinfo_override`,
        allowHttp,
      );
    }
    return resolved;
  }
  const c = up.oauth2_config as NonNullable<UpstreamConfig['oauth2_config']>;
  const allowHttp = globalHttp || c.insecure_allow_http === true;
  const f = `${field}.oauth2_config`;
  if (Boolean(c.client_id) === Boolean(c.dcr_config))
    throw bad(`${f}: exactly one of client_id or dcr_config must be set`);
  if (c.dcr_config && (c.client_secret_file || c.client_secret_env_var)) {
    throw bad(
      `${f}: a client secret must not be set with dcr_config; it is obtained by dynamic client registration`,
    );
  }
  const resolved: ResolvedUpstream = {
    name: up.name,
    type: 'oauth2',
    clientId: c.client_id || undefined,
    clientSecret: secretFrom(env, c.client_secret_file, c.client_secret_env_var, `${f}.client_secret`),
    redirectUri: c.redirect_uri || defaultRedirect,
    scopes: [...(c.scopes ?? [])],
    additionalParams: checkAdditionalParams(
      c.additional_authorization_params,
      `${f}.additional_authorization_params`,
    ),
    allowHttp,
    oauth2: {
      authorizationEndpoint: checkHttpUrl(c.authorization_endpoint, `${f}.authorization_endpoint`, allowHttp),
      tokenEndpoint: checkHttpUrl(c.token_endpoint, `${f}.token_endpoint`, allowHttp),
    },
  };
  if (c.token_response_mapping) {
    const m = c.token_response_mapping;
    resolved.tokenResponseMapping = {
      access_token_path: m.access_token_path,
      expires_in_path: m.expires_in_path || 'expires_in',
      refresh_token_path: m.refresh_token_path || 'refresh_token',
      scope_path: m.scope_path || 'scope',
    };
  }
  if (c.userinfo) resolved.userInfo = resolveUserInfo(c.userinfo, `${f}.userinfo`, allowHttp);
  if (c.dcr_config) {
    const d = c.dcr_config;
    if (Boolean(d.discovery_url) === Boolean(d.registration_endpoint)) {
      throw bad(`${f}.dcr_config: exactly one of discovery_url or registration_endpoint must be set`);
    }
    const dcr: NonNullable<ResolvedUpstream['dcr']> = {};
    if (d.discovery_url)
      dcr.discoveryUrl = checkHttpUrl(d.discovery_url, `${f}.dcr_config.discovery_url`, allowHttp);
    if (d.registration_endpoint) {
      dcr.registrationEndpoint = checkHttpUrl(
        d.registration_endpoint,
        `${f}.dcr_config.registration_endpoint`,
        allowHttp,
      );
    }
    const iat = secretFrom(
      env,
      d.initial_access_token_file,
      d.initial_access_token_env_var,
      `${f}.dcr_config.initial_access_token`,
    );
    if (iat !== undefined) dcr.initialAccessToken = iat;
    if (d.software_id) dcr.softwareId = d.software_id;
    if (d.software_statement) dcr.softwareStatement = d.software_statement;
    resolved.dcr = dcr;
  }
  return resolved;
}

function resolveTls(cfg: RedisTlsConfig | undefined, field: string): ResolvedRedis['tls'] {
  if (!cfg) return undefined;
  const tls: NonNullable<ResolvedRedis['tls']> = { rejectUnauthorized: cfg.insecure_skip_verify !== true };
  if (cfg.ca_cert_file) tls.ca = readSecretFile(cfg.ca_cert_file, `${field}.ca_cert_file`);
  return tls;
}

/** Makes sure every key carries a Redis Cluster hash tag, so multi-key scripts stay in one slot. */
function withHashTag(prefix: string): string {
  return /\{[^{}]+\}/.test(prefix) ? prefix : `${prefix}{authserver}:`;
}

function resolveRedis(cfg: RedisConfig | undefined, env: NodeJS.ProcessEnv): ResolvedRedis {
  const f = 'storage.redis_config';
  if (!cfg) throw bad(`${f} is required when storage.type is "redis"`);
  const hasAddr = Boolean(cfg.addr);
  if (hasAddr === Boolean(cfg.sentinel_config))
    throw bad(`${f}: exactly one of addr or sentinel_config must be set`);
  if (cfg.cluster_mode && !hasAddr) throw bad(`${f}: cluster_mode requires addr to be set`);
  const acl = cfg.acl_user_config;
  if (!acl?.password_env_var) throw bad(`${f}.acl_user_config.password_env_var is required`);
  const redis: ResolvedRedis = {
    mode: cfg.sentinel_config ? 'sentinel' : cfg.cluster_mode ? 'cluster' : 'standalone',
    password: readSecretEnv(env, acl.password_env_var, `${f}.acl_user_config.password_env_var`),
    keyPrefix: withHashTag(cfg.key_prefix || AUTH_SERVER_DEFAULTS.redisKeyPrefix),
    dialTimeoutMs: cfg.dial_timeout
      ? parseDuration(cfg.dial_timeout, `${f}.dial_timeout`)
      : AUTH_SERVER_DEFAULTS.redisDialTimeoutMs,
    readTimeoutMs: cfg.read_timeout
      ? parseDuration(cfg.read_timeout, `${f}.read_timeout`)
      : AUTH_SERVER_DEFAULTS.redisReadTimeoutMs,
    writeTimeoutMs: cfg.write_timeout
      ? parseDuration(cfg.write_timeout, `${f}.write_timeout`)
      : AUTH_SERVER_DEFAULTS.redisWriteTimeoutMs,
  };
  if (acl.username_env_var)
    redis.username = readSecretEnv(env, acl.username_env_var, `${f}.acl_user_config.username_env_var`);
  if (cfg.addr) redis.addr = hostPort(cfg.addr, `${f}.addr`);
  if (cfg.sentinel_config) {
    const s = cfg.sentinel_config;
    if (!s.sentinel_addrs?.length)
      throw bad(`${f}.sentinel_config: either sentinel_addrs or a sentinel service must be specified`);
    redis.sentinel = {
      masterName: s.master_name,
      addrs: s.sentinel_addrs.map((a, i) => hostPort(a, `${f}.sentinel_config.sentinel_addrs[${i}]`)),
      db: s.db ?? 0,
    };
  }
  const tls = resolveTls(cfg.tls, `${f}.tls`);
  if (tls) redis.tls = tls;
  const stls = resolveTls(cfg.sentinel_tls, `${f}.sentinel_tls`);
  if (stls && redis.sentinel) redis.sentinelTls = stls;
  return redis;
}

function lifespan(
  value: string | undefined,
  field: keyof typeof LIFESPAN_BOUNDS,
  fallbackSec: number,
): number {
  if (!value) return fallbackSec;
  const sec = parseDuration(value, `token_lifespans.${field}`) / 1000;
  const [min, max] = LIFESPAN_BOUNDS[field];
  if (sec < min || sec > max) throw bad(`token_lifespans.${field} must be between ${min}s and ${max}s`);
  return Math.floor(sec);
}

/** The schema's problems, with array indexes as `[i]` (`upstreams[0].name: ...`). */
function schemaProblems(input: unknown): string[] {
  const validate = validateEmbeddedAuthServerConfig;
  if (validate(input)) return [];
  return (validate.errors ?? [])
    .map(formatAjvError)
    .map((p) => p.replace(/^\(root\): /, '').replace(/\.(\d+)(?=[.:])/g, '[$1]'));
}

/**
 * Parses `embedded_auth_server_config` (any input: it is checked here) and reads every
 * secret it references.
 */
export function resolveAuthServerConfig(
  input: unknown,
  env: NodeJS.ProcessEnv = process.env,
): ResolvedAuthServerConfig {
  const problems = schemaProblems(input);
  if (problems.length > 0) throw bad(problems.join('; '));
  const cfg = input as EmbeddedAuthServerConfig;
  const globalHttp = cfg.insecure_allow_http === true;
  if (!cfg.issuer) throw bad('issuer is required');
  const issuer = checkIssuerUrl(cfg.issuer, 'issuer', globalHttp);
  const authorizeBase = cfg.authorization_endpoint_base_url
    ? checkIssuerUrl(cfg.authorization_endpoint_base_url, 'authorization_endpoint_base_url', globalHttp)
    : issuer;
  if (!Array.isArray(cfg.upstreams) || cfg.upstreams.length === 0)
    throw bad('upstreams needs at least one entry');
  const upstreams = cfg.upstreams.map((u, i) => resolveUpstream(u, i, issuer, env, globalHttp));
  const names = new Set<string>();
  for (const u of upstreams) {
    if (names.has(u.name)) throw bad(`upstreams: the name "${u.name}" is used twice`);
    names.add(u.name);
  }

  const keyCfg = cfg.signing_key_config ?? {};
  const keyPath = (file: string) =>
    keyCfg.key_dir && !file.startsWith('/') ? `${keyCfg.key_dir}/${file}` : file;
  const signingKeys: ResolvedAuthServerConfig['signingKeys'] = [];
  if (keyCfg.signing_key_file) {
    const p = keyPath(keyCfg.signing_key_file);
    signingKeys.push({ source: p, text: readSecretFile(p, 'signing_key_config.signing_key_file') });
  } else if (keyCfg.fallback_key_files?.length) {
    throw bad('signing_key_config.fallback_key_files needs signing_key_file (the key that signs)');
  }
  for (const [i, f] of (keyCfg.fallback_key_files ?? []).entries()) {
    const p = keyPath(f);
    signingKeys.push({ source: p, text: readSecretFile(p, `signing_key_config.fallback_key_files[${i}]`) });
  }
  if (signingKeys.length > 5) throw bad('signing_key_config: at most 5 keys (1 signing + 4 fallback)');

  const hmacSecrets = (cfg.hmac_secret_files ?? []).map((f, i) => {
    const text = readSecretFile(f, `hmac_secret_files[${i}]`).trim();
    return Buffer.from(text, 'utf8');
  });
  const current = hmacSecrets[0];
  if (current && current.length < AUTH_SERVER_DEFAULTS.minHmacSecretBytes) {
    throw bad(
      `hmac_secret_files[0] (the current secret) must hold at least ${AUTH_SERVER_DEFAULTS.minHmacSecretBytes} bytes`,
    );
  }

  const lifespans = cfg.token_lifespans ?? {};
  const scopesSupported = cfg.scopes_supported?.length
    ? [...new Set(cfg.scopes_supported)]
    : [...AUTH_SERVER_DEFAULTS.scopesSupported];
  const allowedAudiences = [...(cfg.allowed_audiences ?? [])];
  if (allowedAudiences.length === 0) {
    throw bad(
      'allowed_audiences needs at least one entry (RFC 8707 resource validation; usually the workload URL)',
    );
  }
  for (const [i, a] of allowedAudiences.entries()) checkHttpUrl(a, `allowed_audiences[${i}]`, true);

  const storage: ResolvedAuthServerConfig['storage'] =
    cfg.storage?.type === 'redis'
      ? { type: 'redis', redis: resolveRedis(cfg.storage.redis_config, env) }
      : { type: 'memory' };

  return Object.freeze({
    issuer,
    authorizationEndpoint: `${authorizeBase}/oauth/authorize`,
    signingKeys,
    hmacSecrets,
    accessTokenLifespanSec: lifespan(
      lifespans.access_token_lifespan,
      'access_token_lifespan',
      AUTH_SERVER_DEFAULTS.accessTokenLifespanSec,
    ),
    authCodeLifespanSec: lifespan(
      lifespans.auth_code_lifespan,
      'auth_code_lifespan',
      AUTH_SERVER_DEFAULTS.authCodeLifespanSec,
    ),
    refreshTokenLifespanSec: lifespan(
      lifespans.refresh_token_lifespan,
      'refresh_token_lifespan',
      AUTH_SERVER_DEFAULTS.refreshTokenLifespanSec,
    ),
    scopesSupported,
    allowedAudiences,
    upstreams,
    storage,
  });
}
