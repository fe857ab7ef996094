export { allowedOriginsProblem } from './allowed-origins.js';
export type { GuardrailsConfig } from './guardrails.js';
export { defaultGuardrailsConfig, GuardrailsConfigSchema, guardrailsSummary } from './guardrails.js';
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
export type {
  BackendAuthStrategy,
  OptimizerConfig,
  StaticBackendConfig,
  VmcpConfig,
  WorkloadToolsConfig,
} from './vmcp.js';
export { OptimizerConfigSchema, VmcpConfigSchema } from './vmcp.js';
export type { ProxyMode, RunConfig, Transport } from './run-config.js';
export {
  ProxyModeSchema,
  RUN_CONFIG_SCHEMA_VERSION,
  RunConfigSchema,
  TransportSchema,
} from './run-config.js';
export type { ConfigFile } from './skep-config.js';
export { ConfigSchema } from './skep-config.js';
export { ERROR_SCHEMA, ErrorBody, NoContent } from './api/error-body.js';
export type {
  BulkRequest,
  CreateWorkloadRequest,
  UpdateWorkloadRequest,
  WorkloadDetail,
  WorkloadSummary,
} from './api/workloads.js';
export {
  BulkRequestSchema,
  CreateWorkloadSchema,
  UpdateWorkloadSchema,
  UpgradeCheckResultSchema,
  UpgradeRequestSchema,
  WorkloadDetailSchema,
  WorkloadSummarySchema,
} from './api/workloads.js';
