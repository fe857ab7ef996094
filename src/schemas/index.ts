export { checkMatcher, toCelValue } from './cel.js';
export type { Validator } from './validate.js';
export { createValidator, formatAjvError } from './validate.js';
export type {
  EmbeddedAuthServerConfig,
  OAuth2UpstreamConfig,
  OidcUpstreamConfig,
  RedisConfig,
  RedisTlsConfig,
  TokenResponseMapping,
  UpstreamConfig,
  UserInfoConfig,
} from './embedded-auth-server.js';
export { EmbeddedAuthServerConfigSchema } from './embedded-auth-server.js';
export type { PermissionProfile } from './permission-profile.js';
export { PermissionProfileSchema } from './permission-profile.js';
export { Bool, Opt, Str, StrMap, Strs } from './shorthand.js';
