/**
 * Building an ioredis client for one of the three Redis topologies Skep talks to
 * (standalone, Sentinel, Cluster), with ACL user/password, TLS and timeouts. Shared by the
 * authorization server's storage, the proxy's rate limiter and its session store, which then
 * add their own Lua scripts and connect. The client is created unconnected (`lazyConnect`)
 * with an `error` listener, so a failure surfaces through the command that hit it, never as
 * an unhandled event. ioredis loads only when a client is built.
 *
 * `scaling_config.session_redis` names only `host:port`: `connectRedisAt` asks that node
 * whether it runs in cluster mode and connects accordingly (rate limits and sessions).
 */
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { SkepError } from './errors.js';
import { lazyRequire } from './lazy.js';

export const loadIoredis = lazyRequire<typeof import('ioredis')>('ioredis');

export interface RedisTls {
  ca?: string;
  rejectUnauthorized: boolean;
}

/** Where and how to reach Redis. */
export interface RedisConnectionConfig {
  mode: 'standalone' | 'cluster' | 'sentinel';
  /** Standalone server, or a Cluster seed node. */
  addr?: { host: string; port: number };
  /** Logical database of a standalone server (Sentinel carries its own; Cluster has only 0). */
  db?: number;
  sentinel?: { masterName: string; addrs: { host: string; port: number }[]; db: number };
  username?: string;
  password?: string;
  dialTimeoutMs: number;
  readTimeoutMs: number;
  writeTimeoutMs: number;
  tls?: RedisTls;
  sentinelTls?: RedisTls;
}

function tlsOptions(tls: RedisTls | undefined): RedisOptions['tls'] {
  if (!tls) return undefined;
  return { rejectUnauthorized: tls.rejectUnauthorized, ...(tls.ca === undefined ? {} : { ca: tls.ca }) };
}

function connectionOptions(cfg: RedisConnectionConfig, extra: RedisOptions): RedisOptions {
  const opts: RedisOptions = {
    connectTimeout: cfg.dialTimeoutMs,
    // ioredis has one per-command deadline; it covers both the write and the read of a reply.
    commandTimeout: Math.max(cfg.readTimeoutMs, cfg.writeTimeoutMs),
    maxRetriesPerRequest: 3,
    lazyConnect: true,
    // After a failover the old master turns read-only: reconnect (Sentinel names the new one) and resend.
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 2 : false),
    ...extra,
  };
  if (cfg.username !== undefined) opts.username = cfg.username;
  if (cfg.password !== undefined) opts.password = cfg.password;
  const tls = tlsOptions(cfg.tls);
  if (tls) opts.tls = tls;
  return opts;
}

/**
 * An unconnected client for `cfg` (call `connect()`). `extra` overrides the per-node options
 * (e.g. `enableOfflineQueue: false` for a caller that prefers failing fast to queueing).
 */
export function createRedisClient(cfg: RedisConnectionConfig, extra: RedisOptions = {}): Redis | Cluster {
  const { Cluster, Redis } = loadIoredis();
  const base = connectionOptions(cfg, extra);
  let client: Redis | Cluster;
  if (cfg.mode === 'cluster') {
    const addr = cfg.addr as { host: string; port: number };
    client = new Cluster([addr], {
      lazyConnect: true,
      redisOptions: base,
      clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
      ...(extra.enableOfflineQueue === undefined ? {} : { enableOfflineQueue: extra.enableOfflineQueue }),
      ...(cfg.tls ? { dnsLookup: (address, cb) => cb(null, address) } : {}),
    });
  } else if (cfg.mode === 'sentinel') {
    const s = cfg.sentinel as NonNullable<RedisConnectionConfig['sentinel']>;
    const sentinelTls = tlsOptions(cfg.sentinelTls);
    client = new Redis({
      ...base,
      sentinels: s.addrs,
      name: s.masterName,
      db: s.db,
      failoverDetector: true,
      sentinelMaxConnections: 10,
      ...(sentinelTls ? { enableTLSForSentinelMode: true, sentinelTLS: sentinelTls } : {}),
    });
  } else {
    const addr = cfg.addr as { host: string; port: number };
    client = new Redis({ ...base, host: addr.host, port: addr.port, ...(cfg.db ? { db: cfg.db } : {}) });
  }
  // Errors surface through the failing command; this listener only keeps them from being unhandled.
  client.on('error', () => {});
  return client;
}

/**
 * Where the password of `scaling_config.session_redis` is read from, first set one wins: never
 * from a configuration (ToolHive also takes it only from its environment, as
 * `THV_SESSION_REDIS_PASSWORD`), and never passed to a server (a server
 * inherits only `SERVER_ENV_ALLOWLIST`).
 */
export const SESSION_REDIS_PASSWORD_ENV = [
  'SKEP_SESSION_REDIS_PASSWORD',
  'THV_SESSION_REDIS_PASSWORD',
] as const;

/** The `session_redis` password and the variable it came from; undefined when none is set. */
export function sessionRedisPassword(
  env: NodeJS.ProcessEnv = process.env,
): { password: string; from: string } | undefined {
  for (const name of SESSION_REDIS_PASSWORD_ENV) {
    const v = env[name];
    if (v !== undefined && v !== '') return { password: v, from: name };
  }
  return undefined;
}

/** `host:port` (`[v6]:port`) → parts; `invalid_config` naming the field otherwise. */
export function parseRedisAddress(address: string, field: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(address.trim());
  const port = Number(m?.[3]);
  if (m === null || !(port >= 1 && port <= 65535))
    throw new SkepError('invalid_config', `${field} "${address}" must be host:port, e.g. "redis:6379"`);
  return { host: (m[1] ?? m[2]) as string, port };
}

/** `work`, or a rejection after `ms`. */
export async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ends a connection politely (QUIT) within a second, else drops it. */
export async function closeRedis(client: Redis | Cluster): Promise<void> {
  try {
    await within(1_000, 'QUIT', client.quit());
  } catch {
    client.disconnect();
  }
}

/** A Redis of `scaling_config.session_redis`, as the proxy's stores are given it. */
export interface RedisTarget {
  /** `host:port` (`[v6]:port`), a standalone server or any node of a Cluster. */
  address: string;
  db?: number;
  /** From the environment (`sessionRedisPassword`), with the variable's name for messages. */
  password?: { password: string; from: string };
  /** The connect + ping deadline, ms. */
  pingTimeoutMs?: number;
  /** Each later command's deadline, ms. */
  commandTimeoutMs?: number;
}

/** Who connects to a `RedisTarget`, for messages, and the deadlines it uses by default. */
export interface RedisUse {
  /** "rate limit", "session storage". */
  purpose: string;
  defaults: { pingTimeoutMs: number; commandTimeoutMs: number };
}

type RedisAtOptions = RedisTarget & {
  purpose: string;
  field: string;
  pingTimeoutMs: number;
  commandTimeoutMs: number;
};

/** The configuration field every `RedisTarget` comes from. */
const SESSION_REDIS_FIELD = 'scaling_config.session_redis';

/** What a failed connect means, in words a user can act on (the password itself never appears). */
function connectFailure(o: RedisAtOptions, err: unknown, lastEvent: Error | undefined): SkepError {
  const reason = lastEvent?.message ?? (err instanceof Error ? err.message : String(err));
  if (/^NOAUTH/.test(reason))
    return new SkepError(
      'unauthorized',
      `${o.purpose}: Redis at ${o.address} (${o.field}.address) requires a password: set ${SESSION_REDIS_PASSWORD_ENV.join(' or ')} in Skep's environment`,
      { cause: err },
    );
  if (/^WRONGPASS|invalid password/i.test(reason))
    return new SkepError(
      'unauthorized',
      `${o.purpose}: Redis at ${o.address} (${o.field}.address) refused the password from ${o.password?.from ?? 'the environment'}`,
      { cause: err },
    );
  return new SkepError(
    'unavailable',
    `${o.purpose}: cannot reach Redis at ${o.address} (${o.field}.address): ${reason}`,
    { cause: err },
  );
}

/**
 * Connects to the Redis at `address` and pings it: a standalone client, or a Cluster client
 * seeded with that node when it reports `cluster_enabled:1` (a Cluster has only database 0,
 * so another `db` is an `invalid_config`). Errors name the field and say what to fix: unreachable
 * (`unavailable`), a password missing or refused (`unauthorized`).
 */
export async function connectRedisAt(
  target: RedisTarget,
  use: RedisUse,
): Promise<{ client: Redis | Cluster; mode: 'standalone' | 'cluster' }> {
  const o: RedisAtOptions = Object.assign({}, target, {
    purpose: use.purpose,
    field: SESSION_REDIS_FIELD,
    pingTimeoutMs: target.pingTimeoutMs ?? use.defaults.pingTimeoutMs,
    commandTimeoutMs: target.commandTimeoutMs ?? use.defaults.commandTimeoutMs,
  });
  const addr = parseRedisAddress(o.address, `${o.field}.address`);
  const db = o.db ?? 0;
  const open = async (mode: 'standalone' | 'cluster', selectDb: number): Promise<Redis | Cluster> => {
    const client = createRedisClient(
      {
        mode,
        addr,
        ...(selectDb === 0 ? {} : { db: selectDb }),
        ...(o.password === undefined ? {} : { password: o.password.password }),
        dialTimeoutMs: o.pingTimeoutMs,
        readTimeoutMs: o.commandTimeoutMs,
        writeTimeoutMs: o.commandTimeoutMs,
      },
      // Fail fast while Redis is away: the stores degrade (allow the call, serve from memory)
      // instead of queueing commands until it returns.
      { enableOfflineQueue: false, maxRetriesPerRequest: 1 },
    );
    // ioredis reports why a connect failed (NOAUTH, WRONGPASS) only as an `error` event.
    let lastEvent: Error | undefined;
    const onError = (err: Error): void => {
      lastEvent = err;
    };
    client.on('error', onError);
    try {
      await within(o.pingTimeoutMs, 'connecting to Redis', client.connect());
      await within(o.pingTimeoutMs, 'PING', client.ping());
    } catch (err) {
      client.disconnect();
      throw connectFailure(o, err, lastEvent);
    } finally {
      client.off('error', onError);
    }
    return client;
  };
  const probe = await open('standalone', 0);
  let clusterEnabled: boolean;
  try {
    clusterEnabled = /cluster_enabled:1/.test(await within(o.pingTimeoutMs, 'INFO', probe.info('cluster')));
  } catch (err) {
    probe.disconnect();
    throw new SkepError('unavailable', `${o.purpose}: Redis at ${o.address} did not answer INFO`, {
      cause: err,
    });
  }
  if (!clusterEnabled && db === 0) return { client: probe, mode: 'standalone' };
  probe.disconnect();
  if (clusterEnabled && db !== 0)
    throw new SkepError(
      'invalid_config',
      `${o.field}.db must be 0: ${o.address} is a Redis Cluster node, and a Cluster has only database 0`,
    );
  return clusterEnabled
    ? { client: await open('cluster', 0), mode: 'cluster' }
    : { client: await open('standalone', db), mode: 'standalone' };
}
