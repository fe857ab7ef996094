/**
 * Discovery of the OAuth client stack, against a fake `fetch` (no network): which URLs are
 * asked, in which order, and what stops the search.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AuthorizationServerMetadataError,
  discoverAuthorizationServer,
  discoverJwksUri,
  discoverProtectedResource,
  type FetchLike,
  MAX_RESPONSE_BYTES,
  resourceMetadataFrom,
} from '../../../../src/protocol/oauth/index.js';

type Route = { status?: number; headers?: Record<string, string>; body?: unknown };

/** A fetch answering from `routes` (by method and URL, else by URL); everything else is a 404. */
function fakeFetch(routes: Record<string, Route>): { fetch: FetchLike; asked: string[] } {
  const asked: string[] = [];
  const fetchFn = async (input: Parameters<FetchLike>[0], init?: RequestInit) => {
    const url = String(input);
    const method = init?.method ?? 'GET';
    asked.push(`${method} ${url}`);
    const route = routes[`${method} ${url}`] ?? routes[url];
    if (route === undefined) return new Response('not found', { status: 404 });
    const body = typeof route.body === 'string' ? route.body : JSON.stringify(route.body ?? {});
    return new Response(body, {
      status: route.status ?? 200,
      headers: { 'content-type': 'application/json', ...route.headers },
    });
  };
  return { fetch: fetchFn, asked };
}

const AS = 'https://as.example.com';

function asMetadata(issuer: string): Route {
  return {
    body: { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token` },
  };
}

test('MCP 2025-11-25: for an issuer with a path, RFC 8414 path-inserted, then OIDC path-inserted, then OIDC path-appended', async () => {
  const issuer = `${AS}/tenant/one`;
  const { fetch, asked } = fakeFetch({
    [`${AS}/tenant/one/.well-known/openid-configuration`]: asMetadata(issuer),
  });
  const found = await discoverAuthorizationServer(issuer, fetch);
  assert.deepEqual(asked, [
    `GET ${AS}/.well-known/oauth-authorization-server/tenant/one`,
    `GET ${AS}/.well-known/openid-configuration/tenant/one`,
    `GET ${AS}/tenant/one/.well-known/openid-configuration`,
  ]);
  assert.equal(found?.url, `${AS}/tenant/one/.well-known/openid-configuration`);
  assert.equal(found?.metadata.token_endpoint, `${issuer}/token`);
});

test('MCP 2025-11-25: the first answering document wins; later URLs are not asked', async () => {
  const issuer = `${AS}/tenant/one`;
  const { fetch, asked } = fakeFetch({
    [`${AS}/.well-known/openid-configuration/tenant/one`]: asMetadata(issuer),
    [`${AS}/tenant/one/.well-known/openid-configuration`]: asMetadata('https://never.example'),
  });
  const found = await discoverAuthorizationServer(issuer, fetch);
  assert.equal(found?.url, `${AS}/.well-known/openid-configuration/tenant/one`);
  assert.equal(asked.length, 2);
});

test('MCP 2025-11-25: an issuer without a path has one URL of each kind, RFC 8414 first', async () => {
  const { fetch, asked } = fakeFetch({});
  assert.equal(await discoverAuthorizationServer(AS, fetch), undefined);
  assert.deepEqual(asked, [
    `GET ${AS}/.well-known/oauth-authorization-server`,
    `GET ${AS}/.well-known/openid-configuration`,
  ]);
});

test('RFC 8414 §3.3: metadata naming another issuer is refused; a trailing slash is no difference', async () => {
  const { fetch } = fakeFetch({
    [`${AS}/.well-known/oauth-authorization-server`]: asMetadata('https://other.example.com'),
  });
  await assert.rejects(discoverAuthorizationServer(AS, fetch), (err: unknown) => {
    assert.ok(err instanceof AuthorizationServerMetadataError);
    assert.equal(err.reason, 'issuer_mismatch');
    assert.equal(err.code, 'bad_gateway');
    assert.equal(
      err.message,
      `authorization server metadata at ${AS}/.well-known/oauth-authorization-server names another issuer`,
    );
    return true;
  });
  const slash = fakeFetch({ [`${AS}/.well-known/oauth-authorization-server`]: asMetadata(AS) });
  assert.equal((await discoverAuthorizationServer(`${AS}/`, slash.fetch))?.metadata.issuer, AS);
});

test('RFC 8414 §2: metadata without a token endpoint is refused as lacking endpoints', async () => {
  const { fetch } = fakeFetch({
    [`${AS}/.well-known/oauth-authorization-server`]: {
      body: { issuer: AS, authorization_endpoint: `${AS}/authorize` },
    },
  });
  await assert.rejects(discoverAuthorizationServer(AS, fetch), { reason: 'missing_endpoints' });
});

test('a non-JSON or error answer is skipped, not fatal', async () => {
  const { fetch } = fakeFetch({
    [`${AS}/.well-known/oauth-authorization-server`]: {
      body: '<html>',
      headers: { 'content-type': 'text/html' },
    },
    [`${AS}/.well-known/openid-configuration`]: asMetadata(AS),
  });
  assert.equal((await discoverAuthorizationServer(AS, fetch))?.url, `${AS}/.well-known/openid-configuration`);
});

test('a metadata document over the size cap is refused', async () => {
  const { fetch } = fakeFetch({
    [`${AS}/.well-known/oauth-authorization-server`]: { body: 'x'.repeat(MAX_RESPONSE_BYTES + 1) },
  });
  await assert.rejects(discoverAuthorizationServer(AS, fetch), /response larger than 1048576 bytes/);
});

const MCP = 'https://mcp.example.com';

test('RFC 9728 §5.1: the 401 challenge names the metadata, which is asked first', async () => {
  const named = `${MCP}/custom/prm`;
  const { fetch, asked } = fakeFetch({
    [`POST ${MCP}/mcp`]: {
      status: 401,
      headers: { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${named}"` },
    },
    [named]: { body: { resource: `${MCP}/mcp`, authorization_servers: [AS, 'https://second.example'] } },
  });
  const metadata = await discoverProtectedResource(`${MCP}/mcp`, fetch);
  assert.deepEqual(asked, [`POST ${MCP}/mcp`, `GET ${named}`]);
  assert.deepEqual(metadata, {
    resource: `${MCP}/mcp`,
    authorizationServers: [AS, 'https://second.example'],
  });
});

test('RFC 9728 §3.1: without a challenge, the path-inserted well-known URL, then the root one', async () => {
  const { fetch, asked } = fakeFetch({
    [`${MCP}/.well-known/oauth-protected-resource`]: { body: { authorization_servers: [AS] } },
  });
  const metadata = await discoverProtectedResource(`${MCP}/mcp?tenant=1`, fetch);
  assert.deepEqual(asked, [
    `POST ${MCP}/mcp?tenant=1`,
    `GET ${MCP}/.well-known/oauth-protected-resource/mcp`,
    `GET ${MCP}/.well-known/oauth-protected-resource`,
  ]);
  assert.deepEqual(metadata, { authorizationServers: [AS] }, 'a document without resource is taken');
});

test('RFC 9728: a resource at the root asks the root well-known URL once; none answering is undefined', async () => {
  const { fetch, asked } = fakeFetch({});
  assert.equal(await discoverProtectedResource(`${MCP}/`, fetch), undefined);
  assert.deepEqual(asked, [`POST ${MCP}/`, `GET ${MCP}/.well-known/oauth-protected-resource`]);
});

test('RFC 9728 §5.1: resource_metadata is read from a Bearer challenge, case-insensitively', () => {
  assert.equal(resourceMetadataFrom('Bearer RESOURCE_METADATA="https://x/m"'), 'https://x/m');
  assert.equal(resourceMetadataFrom('Bearer realm="x"'), undefined);
  assert.equal(resourceMetadataFrom(null), undefined);
});

test('OIDC Discovery 1.0 §4.1 then RFC 8414 §3.1: the jwks_uri of an issuer, from the first document naming one', async () => {
  const issuer = `${AS}/tenant/`;
  const oidc = `${AS}/tenant/.well-known/openid-configuration`;
  const inserted = `${AS}/.well-known/oauth-authorization-server/tenant`;
  const appended = `${AS}/tenant/.well-known/oauth-authorization-server`;
  // A document without jwks_uri (or not JSON, or an error) does not end the search.
  const found = fakeFetch({
    [oidc]: { body: { issuer: `${AS}/tenant` } },
    [inserted]: { body: 'not json' },
    [appended]: { body: { jwks_uri: `${AS}/keys` } },
  });
  assert.equal(await discoverJwksUri(issuer, found.fetch), `${AS}/keys`);
  assert.deepEqual(found.asked, [`GET ${oidc}`, `GET ${inserted}`, `GET ${appended}`]);
  // The first one that names it wins; an issuer without a path asks each URL once.
  const first = fakeFetch({
    [`${AS}/.well-known/openid-configuration`]: { body: { jwks_uri: `${AS}/jwks` } },
  });
  assert.equal(await discoverJwksUri(`${AS}/`, first.fetch), `${AS}/jwks`);
  assert.deepEqual(first.asked, [`GET ${AS}/.well-known/openid-configuration`]);
  const none = fakeFetch({});
  assert.equal(await discoverJwksUri(AS, none.fetch), undefined);
  assert.deepEqual(none.asked, [
    `GET ${AS}/.well-known/openid-configuration`,
    `GET ${AS}/.well-known/oauth-authorization-server`,
  ]);
});
