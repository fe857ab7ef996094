/**
 * Claims from an upstream identity provider's access token (ToolHive's upstream claim source): with
 * the embedded authorization server, policies judge the claims of the token the user's own identity
 * provider issued, not those of the token Skep issued. The token is the one the authorization
 * server stored for the caller's session and already trusts (it obtained it from the provider
 * itself), so its payload is read without a signature check.
 */

export type UpstreamClaims =
  | { kind: 'claims'; claims: Record<string, unknown> }
  /** Not a JWT (an opaque token): the reference falls back to the request token's claims
   * (github.com/stacklok/toolhive/issues/5146). */
  | { kind: 'opaque' }
  /** JWT-shaped but its payload is not a JSON object: deny. */
  | { kind: 'invalid' };

const B64URL = /^[A-Za-z0-9_-]*$/;

export function decodeUpstreamClaims(token: string): UpstreamClaims {
  const parts = token.split('.');
  // JWT-shaped: three dot-separated parts (RFC 7519 §7.2); whether they decode is the next question.
  if (parts.length !== 3) return { kind: 'opaque' };
  if (!B64URL.test(parts[1] as string)) return { kind: 'invalid' };
  try {
    const payload: unknown = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8'));
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return { kind: 'invalid' };
    return { kind: 'claims', claims: payload as Record<string, unknown> };
  } catch {
    return { kind: 'invalid' };
  }
}
