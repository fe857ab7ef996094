/**
 * Discovery for an MCP client (MCP 2025-06-18 and 2025-11-25 "Authorization"): the protected
 * resource's metadata (RFC 9728) names its authorization servers; an authorization server's
 * metadata (RFC 8414, or OpenID Connect Discovery 1.0) gives its endpoints. oauth4webapi builds
 * the well-known URLs it knows; the order of the attempts is the MCP specification's.
 */
import * as oauth from 'oauth4webapi';
import { type ErrorCode, isRecord } from '../../shared/index.js';
import {
  type FetchLike,
  getMetadata,
  MCP_PROTOCOL_VERSION,
  REQUEST_TIMEOUT_MS,
  requestOptions,
} from './transport.js';

const HEADERS = { 'mcp-protocol-version': MCP_PROTOCOL_VERSION };

/** What RFC 9728 metadata says about a protected resource. */
export interface ProtectedResourceMetadata {
  /** `authorization_servers` (RFC 9728 §2), the issuers in the server's order. */
  authorizationServers: string[];
  /** `resource` (RFC 9728 §2), when given. */
  resource?: string;
}

/** Where one discovery attempt looks, and how the request is sent. */
interface Attempt {
  url: string;
  send: () => Promise<Response>;
}

/** RFC 9728 §5.1: the `resource_metadata` parameter of a Bearer challenge. */
export function resourceMetadataFrom(header: string | null): string | undefined {
  if (header === null) return undefined;
  return /resource_metadata="([^"]+)"/i.exec(header)?.[1];
}

/** The JSON object a successful metadata answer holds; undefined for an error status or non-JSON. */
async function documentOf(res: Response): Promise<Record<string, unknown> | undefined> {
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    return undefined;
  }
  try {
    const doc: unknown = await res.json();
    return isRecord(doc) ? doc : undefined;
  } catch {
    return undefined;
  }
}

/** The first attempt that answers with a JSON object, in order; each URL is asked once. */
async function firstDocument(
  attempts: readonly Attempt[],
): Promise<{ url: string; doc: Record<string, unknown> } | undefined> {
  const asked = new Set<string>();
  for (const attempt of attempts) {
    if (asked.has(attempt.url)) continue;
    asked.add(attempt.url);
    const doc = await documentOf(await attempt.send());
    if (doc !== undefined) return { url: attempt.url, doc };
  }
  return undefined;
}

/** `url` without query and fragment: the well-known URLs are built from the origin and path. */
function originAndPath(url: string): URL {
  const u = new URL(url);
  u.search = '';
  u.hash = '';
  return u;
}

/**
 * RFC 9728 metadata of the resource at `resourceUrl`. MCP 2025-06-18 "Authorization Server
 * Discovery": an unauthenticated MCP request's 401 challenge names the metadata URL (RFC 9728
 * §5.1); else the well-known URL with the resource's path inserted (§3.1), then the one at
 * the root. Undefined when none answers.
 */
export async function discoverProtectedResource(
  resourceUrl: string,
  fetchFn: FetchLike,
): Promise<ProtectedResourceMetadata | undefined> {
  const probe = await fetchFn(resourceUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  await probe.arrayBuffer().catch(() => undefined);
  const options = requestOptions(fetchFn, HEADERS);
  const resource = originAndPath(resourceUrl);
  const root = new URL(resource.origin);
  const path = resource.pathname === '/' ? '' : resource.pathname;
  const named = resourceMetadataFrom(probe.headers.get('www-authenticate'));
  const found = await firstDocument([
    ...(named === undefined ? [] : [{ url: named, send: () => getMetadata(fetchFn, named, HEADERS) }]),
    {
      url: `${resource.origin}/.well-known/oauth-protected-resource${path}`,
      send: () => oauth.resourceDiscoveryRequest(resource, options),
    },
    {
      url: `${resource.origin}/.well-known/oauth-protected-resource`,
      send: () => oauth.resourceDiscoveryRequest(root, options),
    },
  ]);
  if (found === undefined) return undefined;
  const servers = found.doc['authorization_servers'];
  const metadata: ProtectedResourceMetadata = {
    authorizationServers: Array.isArray(servers)
      ? servers.filter((s): s is string => typeof s === 'string')
      : [],
  };
  if (typeof found.doc['resource'] === 'string') metadata.resource = found.doc['resource'];
  return metadata;
}

/** Why an authorization server's metadata was not usable (`bad_gateway`: the server answered, unusably). */
export class AuthorizationServerMetadataError extends Error {
  override readonly name = 'AuthorizationServerMetadataError';
  readonly code: ErrorCode = 'bad_gateway';
  constructor(
    /** Where the metadata was read. */
    readonly url: string,
    readonly reason: 'issuer_mismatch' | 'missing_endpoints',
  ) {
    super(
      reason === 'issuer_mismatch'
        ? `authorization server metadata at ${url} names another issuer`
        : `authorization server metadata at ${url} lacks endpoints`,
    );
  }
}

/**
 * The metadata of the authorization server `issuer`, and where it was read; undefined when
 * no well-known URL answers. MCP 2025-11-25 "Authorization Server Metadata Discovery": RFC 8414
 * §3.1 with the issuer's path inserted, then OpenID Connect Discovery with the path inserted,
 * then with it appended (OpenID Connect Discovery 1.0 §4.1); an issuer without a path has one
 * URL of each kind. The document must name `issuer` itself (RFC 8414 §3.3; a trailing slash
 * aside) and give the authorization and token endpoints.
 */
export async function discoverAuthorizationServer(
  issuer: string,
  fetchFn: FetchLike,
): Promise<{ metadata: oauth.AuthorizationServer; url: string } | undefined> {
  const options = requestOptions(fetchFn, HEADERS);
  const iss = new URL(issuer);
  const path = iss.pathname === '/' ? '' : iss.pathname.replace(/\/$/, '');
  const oidcInserted = `${iss.origin}/.well-known/openid-configuration${path}`;
  const found = await firstDocument([
    {
      url: `${iss.origin}/.well-known/oauth-authorization-server${path}`,
      send: () => oauth.discoveryRequest(iss, { ...options, algorithm: 'oauth2' }),
    },
    { url: oidcInserted, send: () => getMetadata(fetchFn, oidcInserted, HEADERS) },
    {
      url: `${iss.origin}${path}/.well-known/openid-configuration`,
      send: () => oauth.discoveryRequest(iss, { ...options, algorithm: 'oidc' }),
    },
  ]);
  if (found === undefined) return undefined;
  const { url, doc } = found;
  if (doc['issuer'] !== issuer && doc['issuer'] !== issuer.replace(/\/$/, ''))
    throw new AuthorizationServerMetadataError(url, 'issuer_mismatch');
  if (typeof doc['authorization_endpoint'] !== 'string' || typeof doc['token_endpoint'] !== 'string')
    throw new AuthorizationServerMetadataError(url, 'missing_endpoints');
  // The checks above make it an RFC 8414 §2 document as far as this client reads it.
  return { metadata: doc as oauth.AuthorizationServer, url };
}

/**
 * The `jwks_uri` an issuer publishes, for a resource server that verifies the issuer's JWTs
 * (RFC 8414 §2, OpenID Connect Discovery 1.0 §3); undefined when no metadata document names
 * one. OpenID Connect Discovery 1.0 §4.1 (the well-known path appended to the issuer's) comes
 * first, as identity providers publish it; then RFC 8414 §3.1 (inserted before the issuer's
 * path) and, for an issuer with a path, the RFC 8414 name appended, where some servers put it.
 * A document without a `jwks_uri` string does not end the search. Only the key set is read:
 * an issuer that is not an authorization server (no endpoints) is fine here.
 */
export async function discoverJwksUri(issuer: string, fetchFn: FetchLike): Promise<string | undefined> {
  const options = requestOptions(fetchFn);
  const iss = new URL(issuer);
  const base = `${iss.origin}${iss.pathname.replace(/\/$/, '')}`;
  const attempts: Attempt[] = [
    {
      url: `${base}/.well-known/openid-configuration`,
      send: () => oauth.discoveryRequest(iss, { ...options, algorithm: 'oidc' }),
    },
    {
      url: `${iss.origin}/.well-known/oauth-authorization-server${iss.pathname === '/' ? '' : iss.pathname.replace(/\/$/, '')}`,
      send: () => oauth.discoveryRequest(iss, { ...options, algorithm: 'oauth2' }),
    },
    {
      url: `${base}/.well-known/oauth-authorization-server`,
      send: () => getMetadata(fetchFn, `${base}/.well-known/oauth-authorization-server`, {}),
    },
  ];
  const asked = new Set<string>();
  for (const attempt of attempts) {
    if (asked.has(attempt.url)) continue;
    asked.add(attempt.url);
    const jwksUri = (await documentOf(await attempt.send()))?.['jwks_uri'];
    if (typeof jwksUri === 'string') return jwksUri;
  }
  return undefined;
}
