/**
 * Where a workload's proxy keeps its sessions, from the run configuration (ToolHive's
 * fields): `scaling_config.session_redis` (`address`, `db`, `key_prefix`) for Redis
 * shared by every proxy of the workload, else this proxy's memory; `session_ttl` (a Go duration,
 * default 2 h) for how long a session lives after its last use. Only a streamable-HTTP server
 * has sessions the proxy can keep: a stdio server's live in its process, and a legacy SSE
 * session is the event stream held through one proxy (`unsupported-fields.ts` refuses the
 * fields there). Checked on create, update and import, and read again by the runner.
 */
import { checkKeyPrefix, SESSION_DEFAULTS, type SessionStorageOptions } from '../dataplane/proxy/index.js';
import { goDurationNs, parseRedisAddress, SESSION_REDIS_PASSWORD_ENV, SkepError } from '../shared/index.js';
import type { RunConfig } from './run-config.js';

type SessionFields = Pick<RunConfig, 'transport' | 'remote_url' | 'session_ttl' | 'scaling_config'>;

/** Whether the proxy relays a streamable-HTTP server's own sessions (and so can keep them). */
export function keepsHttpSessions(config: Pick<RunConfig, 'transport' | 'remote_url'>): boolean {
  return config.remote_url !== undefined
    ? config.transport !== 'sse'
    : config.transport === 'streamable-http';
}

/**
 * `scaling_config.session_redis` without an address asks for nothing when its `db` and
 * `key_prefix` are the defaults (what exports carry); other values would be silent.
 */
export function sessionRedisWithoutAddress(value: unknown): 'default' | 'not-default' | undefined {
  if (value === undefined || value === null || typeof value !== 'object') return 'default';
  const v = value as { address?: unknown; db?: unknown; key_prefix?: unknown };
  if (v.address !== undefined && v.address !== '') return undefined;
  const db = v.db ?? 0;
  const prefix = v.key_prefix ?? '';
  return db === 0 && (prefix === '' || prefix === SESSION_DEFAULTS.keyPrefix) ? 'default' : 'not-default';
}

/**
 * The session store the workload's proxy uses; undefined when its server has no sessions the
 * proxy keeps. `invalid_config` naming the field for a bad `session_ttl`, address, db or prefix.
 */
export function sessionStorageOf(config: SessionFields): SessionStorageOptions | undefined {
  const ttlMs = sessionTtlMs(config.session_ttl);
  const redis = config.scaling_config?.session_redis;
  refuseUnknownKeys(redis);
  const address = redis?.address ?? '';
  // The prefix is checked wherever it is set, even where only the rate limiter reads the Redis.
  const keyPrefix = checkKeyPrefix(redis?.key_prefix, 'scaling_config.session_redis.key_prefix');
  const db = redis?.db ?? 0;
  if (!Number.isInteger(db) || db < 0)
    throw new SkepError(
      'invalid_config',
      `scaling_config.session_redis.db must be an integer ≥ 0 (got ${db})`,
    );
  if (address !== '') parseRedisAddress(address, 'scaling_config.session_redis.address');
  if (!keepsHttpSessions(config)) return undefined;
  return address === '' ? { ttlMs } : { ttlMs, redis: { address, db, keyPrefix } };
}

const SESSION_REDIS_KEYS = ['address', 'db', 'key_prefix'];

/** A key the reference does not have would be stored and ignored; a password must not be stored at all. */
function refuseUnknownKeys(redis: object | undefined): void {
  const unknown = Object.keys(redis ?? {}).filter((k) => !SESSION_REDIS_KEYS.includes(k));
  if (unknown.length === 0) return;
  if (unknown.includes('password'))
    throw new SkepError(
      'invalid_config',
      `scaling_config.session_redis.password: a password is never part of the configuration; remove it and set ${SESSION_REDIS_PASSWORD_ENV.join(' or ')} in Skep's environment`,
    );
  throw new SkepError(
    'invalid_config',
    `scaling_config.session_redis: unknown key${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (known: ${SESSION_REDIS_KEYS.join(', ')})`,
  );
}

/** `session_ttl`: a Go duration string > 0 (`"2h"`, `"90m"`, `"1h30m0s"`); absent or empty: 2 h. */
function sessionTtlMs(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return SESSION_DEFAULTS.ttlMs;
  const nanos = goDurationNs(value.trim());
  if (nanos === undefined)
    throw new SkepError(
      'invalid_config',
      `session_ttl "${value}" is not a duration; write e.g. "2h", "90m" or "1h30m"`,
    );
  // Redis expires keys in whole seconds.
  if (!(nanos >= 1e9))
    throw new SkepError('invalid_config', `session_ttl must be at least 1s (got "${value}")`);
  return nanos / 1e6;
}
