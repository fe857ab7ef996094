/**
 * The `ratelimit` stage (ToolHive's rate-limit middleware): token buckets on `tools/call`. Built
 * from `rate_limit_config` (+ `rate_limit_namespace`, `scaling_config.session_redis`), or from a
 * `middleware_configs` entry with the reference's parameters `{namespace, server_name, config,
 * redis_addr?, redis_db?}`.
 *
 * Better than the reference, which refuses to start without Redis: with no Redis address the
 * buckets live in this proxy's memory (one proxy, one budget); with one, in Redis, shared by
 * every proxy that names the same namespace and server. The Redis password comes from the
 * environment (`SKEP_SESSION_REDIS_PASSWORD`, else the reference's
 * `THV_SESSION_REDIS_PASSWORD`), never from the configuration. When Redis fails during a
 * check, the call is allowed (fail-open, counted and logged at WARN; see `ratelimit/limiter.ts`).
 *
 * Only parsed `tools/call` requests are limited, by the server's own tool name (the proxy
 * maps `tools_override` names back before any stage runs). Per-user buckets apply when the
 * caller has a `sub`: the verified token's, or the local user's without authentication, so
 * on a workstation everyone is one user. A limited call gets HTTP 429 with `Retry-After` and
 * the JSON-RPC error code 429, as the reference sends them.
 */
import { type JsonRpcId, PROTOCOL_ERRORS, refusalBody } from '../../../protocol/index.js';
import {
  isEmptyRateLimitConfig,
  parseRateLimitConfig,
  type RateLimitConfig,
  type RateLimitDecision,
} from '../../middleware/ratelimit/index.js';
import type { ProxyMiddlewareResult, ProxyRequestContext } from '../../proxy/index.js';
import { definedOnly, parseRedisAddress, sessionRedisPassword, SkepError } from '../../../shared/index.js';
import { callerClaims } from '../identity.js';
import type { Stage, StageDeps, StageFactory } from '../types.js';

/** Used in key names when `rate_limit_namespace` is unset (the reference always has a Kubernetes namespace). */
export const DEFAULT_RATE_LIMIT_NAMESPACE = 'default';

interface RateLimitParameters {
  namespace: string;
  serverName: string;
  config: RateLimitConfig;
  redis?: { address: string; db: number };
}

const PARAMETER_KEYS = ['namespace', 'server_name', 'config', 'redis_addr', 'redis_db'];

function bad(message: string): never {
  throw new SkepError('invalid_config', message);
}

function parseParameters(value: unknown, serverNameDefault: string): RateLimitParameters {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    bad("middleware_configs: the parameters of 'ratelimit' must be an object with config");
  const raw = value as Record<string, unknown>;
  const unknown = Object.keys(raw).filter((k) => !PARAMETER_KEYS.includes(k));
  if (unknown.length > 0)
    bad(`ratelimit parameters: unknown key(s) ${unknown.join(', ')} (known: ${PARAMETER_KEYS.join(', ')})`);
  const str = (key: string): string | undefined => {
    const v = raw[key];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') bad(`ratelimit parameters.${key} must be a string`);
    return v;
  };
  if (raw['config'] === undefined || raw['config'] === null)
    bad('ratelimit parameters.config is required (the rate_limit_config object)');
  const config = parseRateLimitConfig(raw['config'], 'rate_limit_config');
  const out: RateLimitParameters = {
    namespace: str('namespace') ?? DEFAULT_RATE_LIMIT_NAMESPACE,
    serverName: str('server_name') ?? serverNameDefault,
    config,
  };
  const address = str('redis_addr');
  const db = raw['redis_db'] ?? 0;
  if (typeof db !== 'number' || !Number.isInteger(db) || db < 0)
    bad('scaling_config.session_redis.db (ratelimit redis_db) must be an integer ≥ 0');
  if (address !== undefined) {
    parseRedisAddress(address, 'scaling_config.session_redis.address (ratelimit redis_addr)');
    out.redis = { address, db };
  }
  return out;
}

/** The span attributes of a decision (the telemetry stage writes them); a refusal when it refused. */
function verdict(
  ctx: ProxyRequestContext,
  id: JsonRpcId | undefined,
  decision: RateLimitDecision,
): ProxyMiddlewareResult | undefined {
  // ToolHive's rate limiter sets these span attributes.
  ctx.setSpanAttribute('rate_limit.decision', decision.allowed ? 'allowed' : 'rejected');
  ctx.setSpanAttribute('rate_limit.rejected_by', decision.allowed ? 'none' : decision.rejectedBy);
  ctx.setSpanAttribute('rate_limit.fail_open', decision.allowed && decision.failOpen);
  if (decision.allowed) return undefined;
  const seconds = decision.retryAfterSeconds;
  return {
    status: PROTOCOL_ERRORS.rate_limited.status,
    headers: { 'Content-Type': 'application/json', 'Retry-After': String(seconds) },
    body: refusalBody('rate_limited', id, { retryAfterSeconds: seconds }),
  };
}

export const rateLimitStage: StageFactory = {
  type: 'ratelimit',

  fromRunConfig(config) {
    if (isEmptyRateLimitConfig(config.rate_limit_config)) return undefined;
    const redis = config.scaling_config?.session_redis;
    return {
      namespace: config.rate_limit_namespace ?? '',
      server_name: config.name,
      config: config.rate_limit_config,
      ...(redis?.address === undefined || redis.address === ''
        ? {}
        : { redis_addr: redis.address, redis_db: redis.db ?? 0 }),
    };
  },

  check(parameters, config) {
    parseParameters(parameters, config.name);
  },

  async create(parameters: unknown, deps: StageDeps): Promise<Stage> {
    const params = parseParameters(parameters, deps.config.name);
    // Loaded here, so that a workload without rate limits never loads the limiter (runner footprint).
    const { MemoryBucketStore, RateLimiter, RedisBucketStore } =
      await import('../../middleware/ratelimit/runtime.js');
    const store =
      params.redis === undefined
        ? new MemoryBucketStore(deps.now === undefined ? {} : { now: deps.now })
        : await RedisBucketStore.connect({
            address: params.redis.address,
            db: params.redis.db,
            ...definedOnly({ password: sessionRedisPassword() }),
          });
    const limiter = new RateLimiter({
      config: params.config,
      namespace: params.namespace,
      serverName: params.serverName,
      store,
      logger: deps.logger,
    });
    // Exported as the reference's rate-limit metrics when the workload has telemetry.
    deps.peers?.rateLimits.push({
      namespace: params.namespace,
      server: params.serverName,
      stats: () => limiter.stats(),
    });
    deps.logger.info(
      store instanceof RedisBucketStore
        ? `rate limit: buckets in Redis (${store.mode}) at ${params.redis?.address}, shared by every proxy of ${params.namespace}/${params.serverName}`
        : 'rate limit: buckets in this proxy’s memory (set scaling_config.session_redis to share them between proxies)',
    );
    return {
      name: 'ratelimit',
      handle(ctx) {
        const mcp = ctx.mcp;
        if (mcp?.method !== 'tools/call') return undefined;
        const sub = callerClaims(ctx)['sub'];
        const decision = limiter.check(
          mcp.resourceId ?? '',
          typeof sub === 'string' && sub !== '' ? sub : undefined,
        );
        // Buckets in memory decide at once: the request goes on in the same turn.
        if (decision instanceof Promise) return decision.then((d) => verdict(ctx, mcp.id, d));
        return verdict(ctx, mcp.id, decision);
      },
      close: () => limiter.close(),
    };
  },
};
