/**
 * Building an ioredis client for one of the three Redis topologies Skep talks to
 * (standalone, Sentinel, Cluster), with ACL user/password, TLS and timeouts. Shared by the
 * authorization server's storage and the proxy's rate limiter, which then add their own Lua
 * scripts and connect. The client is created unconnected (`lazyConnect`) with an `error`
 * listener, so a failure surfaces through the command that hit it, never as an unhandled
 * event. ioredis loads only when a client is built.
 */
import type { Cluster, Redis, RedisOptions } from 'ioredis';
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
