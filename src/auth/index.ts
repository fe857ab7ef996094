/**
 * Outgoing and inbound authentication at run time: the proxy middleware chain built from a
 * workload's run configuration (`buildAuthChain`) and the remote server health watch. See
 * `chain.ts` for the order of the stages.
 *
 * The stage modules (inbound JWT, token exchange, AWS STS, the remote OAuth client) are
 * loaded by the chain only when a workload uses them, and so are exported here as types
 * only: a value re-export would make every workload runner load them and their libraries
 * up front (`scripts/runner-footprint.mjs --check` guards this).
 */
export type { AssumeRole, AssumeRoleRequest, AwsCredentials } from './aws-sts.js';
export {
  type AuthChain,
  type AuthChainDeps,
  buildAuthChain,
  type EmbeddedAuthServerHandle,
} from './chain.js';
export { ExpiringCache } from './expiring-cache.js';
export { DEFAULT_REMOTE_HEALTH, probeRemote, type RemoteHealthPolicy, watchRemote } from './remote-health.js';
export type { RemoteOAuthClient, SecretStore } from './remote-oauth.js';
export type { RoleMapper, RoleMapping } from './role-mapping.js';
