/**
 * Every kind of `skep.dev/v1beta1` but MCPExternalAuthConfig (which has its own module): the
 * workloads, the shared configurations, MCPRegistry, EmbeddingServer and the composite tool
 * definitions. The CRD generator, the validator and the controllers iterate this list.
 */
import type { Static } from 'typebox';
import { WORKLOAD_KINDS } from '../workloads/schema.js';
import {
  MCP_COMPOSITE_TOOL_DEFINITION,
  MCP_EMBEDDING_SERVER,
  MCP_REGISTRY,
  type CompositeToolSpecSchema,
  type EmbeddingServerSpecSchema,
  type MCPRegistrySpecSchema,
} from './registry-embedding.js';
import {
  SHARED_CONFIG_KINDS,
  type MCPAuthzConfigSpecSchema,
  type MCPOIDCConfigSpecSchema,
  type MCPTelemetryConfigSpecSchema,
  type MCPToolConfigSpecSchema,
  type MCPWebhookConfigSpecSchema,
} from './shared-configs.js';

export {
  AUTHZ_CONFIG_KEYS,
  MCP_AUTHZ_CONFIG,
  MCP_OIDC_CONFIG,
  MCP_TELEMETRY_CONFIG,
  MCP_TOOL_CONFIG,
  MCP_WEBHOOK_CONFIG,
  SHARED_CONFIG_KINDS,
} from './shared-configs.js';
export { MCP_COMPOSITE_TOOL_DEFINITION, MCP_EMBEDDING_SERVER, MCP_REGISTRY } from './registry-embedding.js';

/** Every kind but MCPExternalAuthConfig, in the order their CRDs are listed. */
export const OPERATOR_KINDS = [
  ...WORKLOAD_KINDS,
  ...SHARED_CONFIG_KINDS,
  MCP_REGISTRY,
  MCP_EMBEDDING_SERVER,
  MCP_COMPOSITE_TOOL_DEFINITION,
];

export type MCPToolConfigSpec = Static<typeof MCPToolConfigSpecSchema>;
export type MCPOIDCConfigSpec = Static<typeof MCPOIDCConfigSpecSchema>;
export type MCPAuthzConfigSpec = Static<typeof MCPAuthzConfigSpecSchema>;
export type MCPTelemetryConfigSpec = Static<typeof MCPTelemetryConfigSpecSchema>;
export type MCPWebhookConfigSpec = Static<typeof MCPWebhookConfigSpecSchema>;
export type MCPRegistrySpec = Static<typeof MCPRegistrySpecSchema>;
export type EmbeddingServerSpec = Static<typeof EmbeddingServerSpecSchema>;
export type CompositeToolSpec = Static<typeof CompositeToolSpecSchema>;
