/** The Kubernetes workload kinds: schemas, kind definitions and their types. */
import type { Static } from 'typebox';
import type {
  MCPGroupSpecSchema,
  MCPRemoteProxySpecSchema,
  MCPServerEntrySpecSchema,
  MCPServerSpecSchema,
  VirtualMCPServerSpecSchema,
} from './schema.js';

export type { KindDefinition } from '../kind.js';
export {
  DiscoveredBackendSchema,
  MCP_GROUP,
  MCP_REMOTE_PROXY,
  MCP_SERVER,
  MCP_SERVER_ENTRY,
  MCPRemoteProxySpecSchema,
  MCPServerSpecSchema,
  NAME_PATTERN,
  VIRTUAL_MCP_SERVER,
  VirtualMCPServerSpecSchema,
  WORKLOAD_KINDS,
} from './schema.js';

export type MCPServerSpec = Static<typeof MCPServerSpecSchema>;
export type MCPRemoteProxySpec = Static<typeof MCPRemoteProxySpecSchema>;
export type MCPServerEntrySpec = Static<typeof MCPServerEntrySpecSchema>;
export type VirtualMCPServerSpec = Static<typeof VirtualMCPServerSpecSchema>;
export type MCPGroupSpec = Static<typeof MCPGroupSpecSchema>;
