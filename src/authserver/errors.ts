/**
 * The authorization server's error family: one `OAuthError` with a closed union of the codes
 * the OAuth specifications define, and one wire shape for all of them (`toResponseObject()`),
 * whether it is sent as a JSON body (token and registration endpoints, RFC 6749 §5.2) or as
 * query parameters of a redirect to the client (RFC 6749 §4.1.2.1).
 */

/**
 * Every error code an endpoint of this server may answer with:
 * RFC 6749 §5.2 (token endpoint) and §4.1.2.1 (authorization response), RFC 7591 §3.2.2
 * (client registration), RFC 8707 §2 (resource indicators) and RFC 6750 §3.1 (bearer tokens).
 */
export type OAuthErrorCode =
  // RFC 6749 §5.2
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  // RFC 6749 §4.1.2.1
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'temporarily_unavailable'
  // RFC 7591 §3.2.2
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'invalid_software_statement'
  | 'unapproved_software_statement'
  // RFC 8707 §2
  | 'invalid_target'
  // RFC 6750 §3.1
  | 'invalid_token'
  | 'insufficient_scope';

/** The RFC 6749 §5.2 body (and, as query parameters, the §4.1.2.1 error response). */
export interface OAuthErrorResponse {
  error: OAuthErrorCode;
  error_description: string;
}

/** An OAuth error with its HTTP status (and headers such as `Retry-After` or `Allow`). */
export class OAuthError extends Error {
  override readonly name = 'OAuthError';
  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(`${code}: ${description}`);
  }

  toResponseObject(): OAuthErrorResponse {
    return { error: this.code, error_description: this.description };
  }
}
