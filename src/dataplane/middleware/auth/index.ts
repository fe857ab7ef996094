/**
 * Outgoing and inbound authentication at run time: the middlewares the pipeline's auth
 * stages build (`src/dataplane/pipeline/stages/`) and the remote server health watch.
 *
 * The middleware modules (inbound JWT, token exchange, AWS STS, the remote OAuth client) are
 * loaded by their stages only when a workload uses them, and so are exported here as types
 * only: a value re-export would make every workload runner load them and their libraries
 * up front (`scripts/runner-footprint.mjs --check` guards this).
 */
export type { AssumeRole, AssumeRoleRequest, AwsCredentials } from './aws-sts.js';
export { ExpiringCache } from './expiring-cache.js';
export { DEFAULT_REMOTE_HEALTH, probeRemote, type RemoteHealthPolicy, watchRemote } from './remote-health.js';
export type { FetchLike } from './http.js';
export type { RemoteOAuthClient, SecretStore } from './remote-oauth.js';
export type { UpstreamTokenSource } from './upstream-inject.js';
export type { RoleMapper, RoleMapping } from './role-mapping.js';
