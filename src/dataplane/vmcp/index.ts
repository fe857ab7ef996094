/**
 * The virtual MCP server (docs/virtual-mcp.md): one endpoint over the running workloads of a group, with
 * conflict resolution, per-backend outgoing auth and health. `config.ts` holds the one schema
 * of its configuration (the run configuration's `vmcp`, `skep vmcp --config`, the CRD's
 * `spec.config`); `server.ts` is what a runner serves.
 */
export {
  type BackendAuthStrategy,
  durationMs,
  parseVmcpConfig,
  type ResolvedVmcpConfig,
  VMCP_DEFAULTS,
  type VmcpConfig,
} from './config.js';
export { VirtualMcpServer, type VirtualServerOptions } from './server.js';
