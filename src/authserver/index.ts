/**
 * The embedded OAuth 2.1 authorization server: mount `createAuthServer(...).handle` on a
 * `node:http` server (the workload proxy), verify its tokens with `verifyAccessToken`, and
 * inject upstream tokens with `upstreamToken`.
 */

export type {
  EmbeddedAuthServerConfig,
  OAuth2UpstreamConfig,
  OidcUpstreamConfig,
  RedisConfig,
  UpstreamConfig,
  UserInfoConfig,
} from '../schemas/index.js';
export type { ResolvedAuthServerConfig } from './config.js';
export { AUTH_SERVER_DEFAULTS, parseDuration, resolveAuthServerConfig } from './config.js';
export { RedisStorage } from './redis-storage.js';
export type { AccessTokenClaims, AuthServer, AuthServerDeps } from './server.js';
export { OAuthError } from './errors.js';
export { createAuthServer } from './server.js';
export type { AuthStorage } from './storage.js';
export { MemoryStorage } from './storage.js';
