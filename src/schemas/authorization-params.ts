/**
 * The authorization request parameters an upstream's `additionalAuthorizationParams` may not
 * set, because the embedded authorization server sets them itself (RFC 6749 §4.1.1, RFC 7636
 * §4.3, OpenID Connect Core §3.1.2.1). Imports nothing: a runner loads it with the auth server.
 */
export const FORBIDDEN_AUTHORIZATION_PARAMS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'nonce',
] as const;
