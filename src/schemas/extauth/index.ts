export type { CelRule } from '../k8s-builders.js';
export { FORBIDDEN_AUTHORIZATION_PARAMS } from '../authorization-params.js';
export { MCP_EXTERNAL_AUTH_CONFIG } from './kind.js';
export {
  AUTH_TYPES,
  BLOCK_TYPES,
  EXTAUTH_API_VERSION,
  EXTAUTH_GROUP,
  EXTAUTH_KIND,
  EXTAUTH_PLURAL,
  EXTAUTH_VERSION,
  ExtAuthConfigSchema,
  ExtAuthSpecSchema,
  ExtAuthStatusSchema,
  PATTERNS,
  REFERENCING_KINDS,
} from './schema.js';
export type {
  AuthType,
  AwsStsConfig,
  Condition,
  EmbeddedAuthServerConfig,
  ExtAuthConfig,
  ExtAuthSpec,
  ExtAuthStatus,
  OAuth2Config,
  OidcConfig,
  RedisConfig,
  ReferencingWorkload,
  RoleMapping,
  SecretRef,
  TokenExchangeConfig,
  UpstreamProvider,
  UserInfoConfig,
} from './types.js';
