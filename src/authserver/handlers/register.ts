/**
 * Dynamic client registration (RFC 7591 §3): any client may register itself, as a public
 * client (`token_endpoint_auth_method` `none`) with exact redirect URIs, the
 * `authorization_code` grant (and optionally `refresh_token`) and scopes this server
 * supports. Rate-limited per process; a registration unused for 30 days is forgotten.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AuthContext, DCR_CLIENT_TTL_SEC } from '../context.js';
import { OAuthError } from '../errors.js';
import { NO_STORE, readJsonObject, sendJson } from '../http.js';
import type { ClientRecord } from '../storage.js';
import { isLoopbackUrl } from '../../shared/index.js';

/** RFC 7591 / OAuth 2.1 §2.3.1: https, loopback http, or a private-use scheme; absolute, no fragment. */
function checkRedirectUri(uri: unknown): string {
  if (typeof uri !== 'string' || uri.length > 2048)
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris must be strings');
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new OAuthError('invalid_redirect_uri', `redirect URI "${uri}" is not an absolute URI`);
  }
  if (url.hash || uri.includes('#'))
    throw new OAuthError('invalid_redirect_uri', `redirect URI "${uri}" has a fragment`);
  if (url.protocol === 'https:') return uri;
  if (url.protocol === 'http:') {
    if (isLoopbackUrl(url)) return uri;
    throw new OAuthError(
      'invalid_redirect_uri',
      `redirect URI "${uri}" must use https unless it is a loopback address`,
    );
  }
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/i.test(url.protocol)) return uri; // private-use scheme (RFC 8252 §7.1)
  throw new OAuthError(
    'invalid_redirect_uri',
    `redirect URI "${uri}" must use https, loopback http or a private-use scheme`,
  );
}

export async function register(ctx: AuthContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (ctx.registerLimiter.take('register') > 0) {
    throw new OAuthError('temporarily_unavailable', 'too many registrations; try again shortly', 429, {
      'retry-after': '1',
    });
  }
  const meta = await readJsonObject(req, 'the registration request', 'invalid_client_metadata');
  const uris = meta['redirect_uris'];
  if (!Array.isArray(uris) || uris.length === 0)
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris is required');
  if (uris.length > 10) throw new OAuthError('invalid_redirect_uri', 'too many redirect_uris (maximum 10)');
  const redirectUris = uris.map(checkRedirectUri);
  const name = meta['client_name'];
  if (name !== undefined && (typeof name !== 'string' || name.length > 256)) {
    throw new OAuthError('invalid_client_metadata', 'client_name must be a string of at most 256 characters');
  }
  const softwareId = meta['software_id'];
  if (
    softwareId !== undefined &&
    (typeof softwareId !== 'string' || !/^[\x20-\x7e]{0,256}$/.test(softwareId))
  ) {
    throw new OAuthError(
      'invalid_client_metadata',
      'software_id must be printable ASCII of at most 256 characters',
    );
  }
  const method = meta['token_endpoint_auth_method'] ?? 'none';
  if (method !== 'none') {
    throw new OAuthError(
      'invalid_client_metadata',
      method === 'client_secret_basic' || method === 'client_secret_post'
        ? "this authorization server only supports token_endpoint_auth_method 'none'"
        : `unsupported token_endpoint_auth_method: ${String(method)}`,
    );
  }
  const grantTypes = (meta['grant_types'] ?? ['authorization_code', 'refresh_token']) as unknown;
  if (
    !Array.isArray(grantTypes) ||
    !grantTypes.includes('authorization_code') ||
    grantTypes.some((g) => g !== 'authorization_code' && g !== 'refresh_token')
  ) {
    throw new OAuthError(
      'invalid_client_metadata',
      'grant_types must include authorization_code and may add refresh_token',
    );
  }
  const responseTypes = (meta['response_types'] ?? ['code']) as unknown;
  if (!Array.isArray(responseTypes) || responseTypes.some((r) => r !== 'code')) {
    throw new OAuthError('invalid_client_metadata', 'response_types may only contain code');
  }
  const scopeText = meta['scope'] ?? ctx.cfg.scopesSupported.join(' ');
  if (typeof scopeText !== 'string')
    throw new OAuthError('invalid_client_metadata', 'scope must be a string');
  const scopes = [...new Set(scopeText.split(' ').filter(Boolean))];
  for (const s of scopes) {
    if (!ctx.cfg.scopesSupported.includes(s))
      throw new OAuthError('invalid_client_metadata', `unsupported scope: ${s}`);
  }
  const client: ClientRecord = {
    client_id: randomUUID(),
    client_id_issued_at: ctx.nowSec(),
    redirect_uris: redirectUris,
    grant_types: [...new Set(grantTypes as string[])],
    response_types: ['code'],
    scope: scopes,
    token_endpoint_auth_method: 'none',
    ...(typeof name === 'string' ? { client_name: name } : {}),
    ...(typeof softwareId === 'string' ? { software_id: softwareId } : {}),
  };
  await ctx.storage.saveClient(client, DCR_CLIENT_TTL_SEC);
  sendJson(res, 201, { ...client, scope: scopes.join(' ') }, NO_STORE);
}
