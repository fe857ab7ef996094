/**
 * Outgoing and inbound authentication at run time: the proxy middleware chain built from a
 * workload's run configuration (`buildAuthChain`), the OAuth client to remote servers and
 * the remote server health watch. See `chain.ts` for the order of the stages.
 */
export {
  type AssumeRole,
  type AssumeRoleRequest,
  type AwsCredentials,
  createAwsStsMiddleware,
  sdkAssumeRole,
  signSigV4,
} from './aws-sts.js';
export {
  type AuthChain,
  type AuthChainDeps,
  buildAuthChain,
  type EmbeddedAuthServerHandle,
} from './chain.js';
export { ExpiringCache } from './expiring-cache.js';
export { createInboundAuthMiddleware, createOidcVerifier, protectedResourceMetadataUrl } from './inbound.js';
export { DEFAULT_REMOTE_HEALTH, probeRemote, type RemoteHealthPolicy, watchRemote } from './remote-health.js';
export { RemoteOAuthClient, remoteSecretNames, type SecretStore } from './remote-oauth.js';
export { createRoleMapper, type RoleMapper, type RoleMapping } from './role-mapping.js';
export { createTokenExchangeMiddleware, TOKEN_EXCHANGE_GRANT, TokenExchanger } from './token-exchange.js';
