/**
 * The public discovery documents: RFC 8414 authorization-server metadata (and its OpenID
 * Connect Discovery alias), RFC 9728 protected-resource metadata, and the JWKS that verifies
 * the access tokens. Browser-based clients read them cross-origin, so they answer CORS
 * preflights and carry `Access-Control-Allow-Origin`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthContext } from '../context.js';
import { expectMethod, sendJson } from '../http.js';

function allowOrigin(req: IncomingMessage): string {
  return typeof req.headers.origin === 'string' ? req.headers.origin : '*';
}

/** A CORS preflight answer (Fetch, "CORS protocol") for the GET-only documents. */
export function corsPreflight(req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(204, {
    'access-control-allow-origin': allowOrigin(req),
    'access-control-allow-methods': 'GET, OPTIONS',
    'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version',
    vary: 'Origin',
  });
  res.end();
}

/** RFC 8414 §2 (and the OIDC discovery alias, with the two fields OIDC requires). */
export function authorizationServerMetadata(
  ctx: AuthContext,
  req: IncomingMessage,
  res: ServerResponse,
  oidc: boolean,
): void {
  expectMethod(req.method ?? 'GET', 'GET');
  const doc: Record<string, unknown> = {
    issuer: ctx.issuer,
    authorization_endpoint: ctx.cfg.authorizationEndpoint,
    token_endpoint: `${ctx.issuer}/oauth/token`,
    jwks_uri: `${ctx.issuer}/.well-known/jwks.json`,
    registration_endpoint: `${ctx.issuer}/oauth/register`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    scopes_supported: ctx.cfg.scopesSupported,
    authorization_response_iss_parameter_supported: true,
  };
  if (oidc) {
    doc['subject_types_supported'] = ['public'];
    doc['id_token_signing_alg_values_supported'] = [ctx.keys.current.alg];
  }
  sendJson(res, 200, doc, {
    'cache-control': 'public, max-age=3600',
    'access-control-allow-origin': allowOrigin(req),
  });
}

/** RFC 9728 protected-resource metadata for the resource this server protects. */
export function protectedResourceMetadata(ctx: AuthContext, req: IncomingMessage, res: ServerResponse): void {
  expectMethod(req.method ?? 'GET', 'GET');
  sendJson(
    res,
    200,
    {
      resource: ctx.cfg.allowedAudiences[0],
      authorization_servers: [ctx.issuer],
      bearer_methods_supported: ['header'],
      scopes_supported: ctx.cfg.scopesSupported,
    },
    {
      'cache-control': 'public, max-age=3600',
      'access-control-allow-origin': allowOrigin(req),
      vary: 'Origin',
    },
  );
}

/** RFC 7517 §5: the public keys that verify this server's access tokens. */
export function jwks(ctx: AuthContext, req: IncomingMessage, res: ServerResponse): void {
  expectMethod(req.method ?? 'GET', 'GET');
  sendJson(
    res,
    200,
    { keys: ctx.keys.all.map((k) => k.publicJwk) },
    { 'cache-control': 'public, max-age=300' },
  );
}
