/** TypeScript types generated from the one TypeBox definition in `schema.ts`. */
import type { Static } from 'typebox';
import type {
  AwsStsSchema,
  ConditionSchema,
  EmbeddedAuthServerSchema,
  ExtAuthConfigSchema,
  ExtAuthSpecSchema,
  ExtAuthStatusSchema,
  OAuth2ConfigSchema,
  OidcConfigSchema,
  RedisSchema,
  ReferencingWorkloadSchema,
  RoleMappingSchema,
  SecretRefSchema,
  TokenExchangeSchema,
  UpstreamProviderSchema,
  UserInfoSchema,
} from './schema.js';

export type SecretRef = Static<typeof SecretRefSchema>;
export type RoleMapping = Static<typeof RoleMappingSchema>;
export type AwsStsConfig = Static<typeof AwsStsSchema>;
export type TokenExchangeConfig = Static<typeof TokenExchangeSchema>;
export type RedisConfig = Static<typeof RedisSchema>;
export type UserInfoConfig = Static<typeof UserInfoSchema>;
export type OAuth2Config = Static<typeof OAuth2ConfigSchema>;
export type OidcConfig = Static<typeof OidcConfigSchema>;
export type UpstreamProvider = Static<typeof UpstreamProviderSchema>;
export type EmbeddedAuthServerConfig = Static<typeof EmbeddedAuthServerSchema>;
export type ExtAuthSpec = Static<typeof ExtAuthSpecSchema>;
export type Condition = Static<typeof ConditionSchema>;
export type ReferencingWorkload = Static<typeof ReferencingWorkloadSchema>;
export type ExtAuthStatus = Static<typeof ExtAuthStatusSchema>;
export type ExtAuthConfig = Static<typeof ExtAuthConfigSchema>;
export type AuthType = ExtAuthSpec['type'];
