export type { DefinedOnly } from './defined-only.js';
export { definedOnly } from './defined-only.js';
export type { DelegationChain } from './delegation.js';
export { delegationChainOf } from './delegation.js';
export type { ErrorCode } from './errors.js';
export { describeError, ERROR_CODES, errorCodeOf, isSkepError, SkepError } from './errors.js';
export { findExecutable, isExecutable } from './executables.js';
export { goDurationMs, goDurationNs } from './go-duration.js';
export { isRecord } from './is-record.js';
export { didYouMean, editDistance, nearestNames } from './nearest-names.js';
export { groupBy } from './group-by.js';
export { BodyTooLargeError, readBody } from './http-body.js';
export type { ListenerLimits, PendingBody } from './listener-limits.js';
export { BodyBudget, LISTENER_DEFAULTS, listenerOptions } from './listener-limits.js';
export { pathExists, writeFileAtomic, writeFileAtomicSync } from './fs.js';
export { processAlive } from './process-alive.js';
export { lazyRequire } from './lazy.js';
export type { OpenResult, OpenUrlOptions } from './open-url.js';
export { authorizationEndpointRefusal, openInBrowser } from './open-url.js';
export type { RedisConnectionConfig, RedisTarget, RedisTls, RedisUse } from './redis.js';
export {
  closeRedis,
  connectRedisAt,
  createRedisClient,
  loadIoredis,
  parseRedisAddress,
  SESSION_REDIS_PASSWORD_ENV,
  sessionRedisPassword,
  within,
} from './redis.js';
export type { LineLogger, LineLoggerOptions, LineOutput, LogFn, Logger } from './logger.js';
export { createLineLogger, linesOf, LOG_LEVELS, mayRedact, REDACTED_KEYS, silentLogger } from './logger.js';
export { createLogger } from './pino-logger.js';
export { SKEP_VERSION } from './version.js';
export type { ProxyEndpoint } from './workload-url.js';
export { ACCESS_TOKEN_PARAM, splitAccessToken, withoutAccessToken, workloadUrl } from './workload-url.js';
export { jsonSyntaxError, yamlSyntaxError } from './syntax-error.js';
export { terminalSafe } from './terminal-text.js';
export { formatLogEntry, formatLogLine } from './log-format.js';
export { sleepUnlessAborted, untilAborted } from './sleep.js';
export { SeqTable } from './seq-table.js';
export type { OriginGuard, OriginGuardOptions } from './origin-guard.js';
export {
  createOriginGuard,
  hostnameOf,
  isLoopbackName,
  isLoopbackUrl,
  isWildcardAddress,
  normalizeOrigin,
} from './origin-guard.js';
export type { AddressClass } from './net/address-class.js';
export { describeConnectError } from './net/connect-error.js';
export { canonicalHost, classifyAddress, isIpLiteral } from './net/address-class.js';
export type { OutboundClientOptions, OutboundPolicy, ResolvedAddress, Resolver } from './net/outbound.js';
export {
  findOutboundRefusal,
  OutboundAddressError,
  OutboundClient,
  outboundFetch,
  parseHostEntry,
  parseHostList,
} from './net/outbound.js';
