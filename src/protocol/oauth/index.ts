/**
 * One OAuth client stack, on oauth4webapi: discovery (RFC 9728, RFC 8414 / OpenID Connect
 * Discovery in the MCP specification's order), dynamic client registration (RFC 7591), the
 * authorization code flow with PKCE S256 (RFC 7636) and resource indicators (RFC 8707),
 * refresh (RFC 6749 §6), token exchange (RFC 8693) and introspection (RFC 7662). Every request goes through the
 * caller's `fetch` — the address-policy-checked one — bounded in time and size. What is
 * stored where, and which hosts may be reached, is the callers' policy.
 *
 * Loaded on demand only (it pulls in oauth4webapi): import this index directly, never
 * through a value re-export a workload runner loads up front.
 */
export {
  type AuthorizationRequest,
  authorizationCodeGrant,
  authorizationRequest,
  type CallbackResult,
  type ClientCredentials,
  checkAuthorizationResponse,
  introspectToken,
  OAuthResponseError,
  refreshGrant,
  registerClient,
  TOKEN_EXCHANGE_GRANT,
  type TokenResponse,
  tokenExchangeGrant,
} from './client.js';
export {
  AuthorizationServerMetadataError,
  discoverAuthorizationServer,
  discoverJwksUri,
  discoverProtectedResource,
  type ProtectedResourceMetadata,
  resourceMetadataFrom,
} from './discovery.js';
export { type FetchLike, MAX_RESPONSE_BYTES, REQUEST_TIMEOUT_MS } from './transport.js';
